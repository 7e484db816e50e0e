package adopt_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"follows/api/apitest"
	"follows/db/adopt/eftest"
)

// Shape 1 on PostgreSQL: the dry run says the plan and changes nothing;
// three instances started together convert the database once, in place,
// every follow kept in its direction, EF's history kept; the server then
// signs up, follows and counts on it.
func TestAdoptNpgsqlConventionShape(t *testing.T) {
	dsn := eftest.Postgres(t, eftest.NpgsqlConvention+eftest.UserUserRows(efFollows))
	raw := apitest.OpenDSN(t, dsn)
	before := eftest.PGTables(t, raw)

	out, err := dryRun(t.Context(), dsn)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"database shape: convention", "FollowerId = FollowersId (the follower)", "copy 6 rows"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
	if after := eftest.PGTables(t, raw); !maps.Equal(before, after) {
		t.Fatalf("the dry run changed the database: %v, then %v", before, after)
	}

	// Instances started together: one adopts, the others find it done.
	outs := make([]string, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() { outs[i], errs[i] = migrate(t.Context(), dsn) })
	}
	wg.Wait()
	converted := 0
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("migrate %d of 3: %v\n%s", i+1, errs[i], outs[i])
		}
		if strings.Contains(outs[i], "database shape: convention") {
			converted++
		}
	}
	if converted != 1 {
		t.Errorf("%d of 3 instances converted the database, want 1", converted)
	}
	tables := eftest.PGTables(t, raw)
	if _, ok := tables["UserUser"]; ok || tables["Follows"] != len(efFollows) || tables["__EFMigrationsHistory"] != 1 {
		t.Errorf("after conversion: %v; want UserUser gone, %d follows, EF's history kept", tables, len(efFollows))
	}

	srv := serve(t, dsn)
	srv.checkFollows(t, efFollows)
	// A sign-up takes the next id from EF's identity, and follows.
	r := srv.post(t, "", `mutation { createUser(input: {name: "frank"}) { user { id } token } }`, nil)
	var su struct {
		CreateUser struct {
			User  struct{ ID string }
			Token string
		}
	}
	b, _ := json.Marshal(r["data"])
	json.Unmarshal(b, &su)
	if su.CreateUser.User.ID != "6" {
		t.Errorf("sign-up after adoption: %s %v, want id 6", b, r["errors"])
	}
	srv.followAlice(t, su.CreateUser.Token, 3)
	srv.stop()
	apitest.CheckDSN(t, dsn)
}

// Shape 2 on PostgreSQL is adopted as it is: rows, times and direction
// kept, the keyset indexes added, and the server's own follows take the
// database's time beside EF's.
func TestAdoptNpgsqlJoinEntityShape(t *testing.T) {
	times := []string{"2025-03-01 10:00:00", "2025-03-01 10:00:00.5", "2025-03-02 08:30:15.123456", "2025-03-03 09:00:00.25", "2025-03-04 00:00:00", "2025-03-05 12:00:00.1"}
	var vals []string
	for i, p := range efFollows {
		vals = append(vals, "("+itoa(p[0])+", "+itoa(p[1])+", '"+times[i]+"+00')")
	}
	dsn := eftest.Postgres(t, eftest.NpgsqlJoinEntity+`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES `+strings.Join(vals, ", ")+";")

	out, err := dryRun(t.Context(), dsn)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"database shape: join-entity", "keep Follows and its rows", "CreatedAt the default clock_timestamp()"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}

	srv := serve(t, dsn)
	srv.checkFollows(t, efFollows)
	r := srv.post(t, "", `{ user(name: "alice") { followers(first: 1) { edges { followedAt node { name } } } } }`, nil)
	if b, _ := json.Marshal(r["data"]); !strings.Contains(string(b), `"followedAt":"2025-03-05T12:00:00.1000000Z","node":{"name":"erin"}`) {
		t.Errorf("alice's newest follower: %s", b)
	}
	// The EF Core app writes beside the server, with its own times.
	raw := apitest.OpenDSN(t, dsn)
	if _, err := raw.Exec(`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (4, 1, '2025-03-06 00:00:00+00')`); err != nil {
		t.Fatal(err)
	}
	srv.followAlice(t, srv.token(t, 3), 4)
	r = srv.post(t, "", `{ user(name: "alice") { followers(first: 2) { nodes { name } } } }`, nil)
	if b, _ := json.Marshal(r["data"]); string(b) != `{"user":{"followers":{"nodes":[{"name":"carol"},{"name":"dave"}]}}}` {
		t.Errorf("alice's followers, newest first: %s", b)
	}
	srv.stop()
	apitest.CheckDSN(t, dsn)
	var indexes []string
	rows, err := raw.Query(`SELECT indexname FROM pg_indexes WHERE tablename = 'Follows' ORDER BY indexname`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		indexes = append(indexes, n)
	}
	rows.Close()
	if want := []string{"IX_Follows_FolloweeId", "IX_Follows_FolloweeId_CreatedAt_FollowerId", "IX_Follows_FollowerId_CreatedAt_FolloweeId", "PK_Follows"}; !slices.Equal(indexes, want) {
		t.Errorf("indexes on Follows: %v, want %v", indexes, want)
	}
	if n := eftest.PGTables(t, raw)["__EFMigrationsHistory"]; n != 1 {
		t.Errorf("__EFMigrationsHistory holds %d rows, want EF's 1", n)
	}
}

// A conversion that would break a constraint is refused on PostgreSQL
// too, with the offending rows named, and nothing changes.
func TestAdoptNpgsqlRefusesBadRows(t *testing.T) {
	pairs := append(slices.Clone(efFollows), [2]int{3, 3})
	dsn := eftest.Postgres(t, eftest.NpgsqlConvention+eftest.UserUserRows(pairs)+`
INSERT INTO "Users" ("Name") VALUES ('ALICE');`)
	raw := apitest.OpenDSN(t, dsn)
	before := eftest.PGTables(t, raw)
	for what, adopt := range map[string]func(context.Context, string) (string, error){"dry run": dryRun, "migrate": migrate} {
		_, err := adopt(t.Context(), dsn)
		if err == nil {
			t.Fatalf("%s succeeded on a database with a self-follow", what)
		}
		for _, want := range []string{"3 -> 3", "1 alice, 6 ALICE", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error does not name %q:\n%v", what, want, err)
			}
		}
	}
	if after := eftest.PGTables(t, raw); !maps.Equal(before, after) {
		t.Errorf("the refused conversion changed the database: %v, then %v", before, after)
	}
}
