package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
)

// efUsers is the Users table EF Core creates for the model on SQLite.
const efUsers = `CREATE TABLE "Users" (
    "Id" INTEGER NOT NULL CONSTRAINT "PK_Users" PRIMARY KEY AUTOINCREMENT,
    "Name" TEXT NOT NULL);
CREATE TABLE "__EFMigrationsHistory" (
    "MigrationId" TEXT NOT NULL CONSTRAINT "PK___EFMigrationsHistory" PRIMARY KEY,
    "ProductVersion" TEXT NOT NULL);
INSERT INTO "__EFMigrationsHistory" VALUES ('20250101000000_Initial', '9.0.0');
INSERT INTO "Users" ("Id", "Name") VALUES (1, 'alice'), (2, 'bob'), (3, 'carol'), (4, 'dave'), (5, 'erin');`

// Shape 1: EF Core's convention-only many-to-many join table.
const efConvention = efUsers + `
CREATE TABLE "UserUser" (
    "FollowersId" INTEGER NOT NULL,
    "FollowingId" INTEGER NOT NULL,
    CONSTRAINT "PK_UserUser" PRIMARY KEY ("FollowersId", "FollowingId"),
    CONSTRAINT "FK_UserUser_Users_FollowersId" FOREIGN KEY ("FollowersId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_UserUser_Users_FollowingId" FOREIGN KEY ("FollowingId") REFERENCES "Users" ("Id") ON DELETE CASCADE);
CREATE INDEX "IX_UserUser_FollowingId" ON "UserUser" ("FollowingId");`

// The known graph: alice follows and is followed, in both shapes.
var efFollows = [][2]int{{1, 2}, {2, 1}, {1, 3}, {3, 4}, {2, 4}, {5, 1}}

var efNames = map[int]string{1: "alice", 2: "bob", 3: "carol", 4: "dave", 5: "erin"}

// makeDB writes a SQLite file by hand, as an EF Core app would have left it.
func makeDB(t *testing.T, ddl string, rows string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ef.db")
	raw := apitest.OpenRaw(t, path)
	if _, err := raw.Exec(ddl + "\n" + rows); err != nil {
		t.Fatalf("make the EF Core database: %v", err)
	}
	raw.Close()
	return path
}

func userUserRows(pairs [][2]int) string {
	var vals []string
	for _, p := range pairs {
		vals = append(vals, "("+itoa(p[0])+", "+itoa(p[1])+")")
	}
	return `INSERT INTO "UserUser" ("FollowersId", "FollowingId") VALUES ` + strings.Join(vals, ", ") + ";"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// checkFollowsOverGraphQL asks the running server who follows whom and
// compares it with the pairs, direction included.
func checkFollowsOverGraphQL(t *testing.T, url string, pairs [][2]int) {
	t.Helper()
	wantFollowing, wantFollowers := map[string][]string{}, map[string][]string{}
	for _, p := range pairs {
		a, b := efNames[p[0]], efNames[p[1]]
		wantFollowing[a] = append(wantFollowing[a], b)
		wantFollowers[b] = append(wantFollowers[b], a)
	}
	for id, name := range efNames {
		var got struct {
			Data struct {
				User struct {
					Name                          string
					FollowerCount, FollowingCount int
					Followers, Following          struct{ Nodes []struct{ Name string } }
				}
			}
		}
		b, _ := json.Marshal(postVars(t, url, "", `query($id: ID) { user(id: $id) { name followerCount followingCount
		  followers { nodes { name } } following { nodes { name } } } }`, map[string]any{"id": itoa(id)}))
		json.Unmarshal(b, &got)
		u := got.Data.User
		names := func(ns []struct{ Name string }) []string {
			out := []string{}
			for _, n := range ns {
				out = append(out, n.Name)
			}
			slices.Sort(out)
			return out
		}
		wf, wr := append([]string{}, wantFollowing[name]...), append([]string{}, wantFollowers[name]...)
		slices.Sort(wf)
		slices.Sort(wr)
		if u.Name != name || !slices.Equal(names(u.Following.Nodes), wf) || !slices.Equal(names(u.Followers.Nodes), wr) ||
			u.FollowingCount != len(wf) || u.FollowerCount != len(wr) {
			t.Errorf("%s: following %v (%d), followers %v (%d); want %v and %v", name,
				names(u.Following.Nodes), u.FollowingCount, names(u.Followers.Nodes), u.FollowerCount, wf, wr)
		}
	}
}

// followAlice has the holder of token follow alice (user 1) on a converted
// or adopted database, which must answer with her new follower count.
func followAlice(t *testing.T, url, token string, followers int) {
	t.Helper()
	r := postVars(t, url, token, `mutation { follow(input: {userId: "1"}) { followee { followerCount } } }`, nil)
	if b, _ := json.Marshal(r["data"]); string(b) != `{"follow":{"followee":{"followerCount":`+itoa(followers)+`}}}` {
		t.Errorf("follow alice on the adopted database: %s %v, want %d followers", b, r["errors"], followers)
	}
}

func tableCount(t *testing.T, path, table string) int {
	t.Helper()
	var n int
	if err := apitest.OpenRaw(t, path).QueryRow(`SELECT COUNT(*) FROM "` + table + `"`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// Shape 1 converts in place: every follow survives in its direction, EF's
// history table stays, UserUser goes only after the counts matched.
func TestAdoptConventionShape(t *testing.T) {
	path := makeDB(t, efConvention, userUserRows(efFollows))

	var out strings.Builder
	if err := run(t.Context(), []string{"migrate", "-dry-run", "-db", path}, &out, &out, noEnv); err != nil {
		t.Fatalf("migrate -dry-run: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "database shape: convention") || !strings.Contains(out.String(), "FollowerId = FollowersId") {
		t.Errorf("dry-run plan:\n%s", &out)
	}
	if tableCount(t, path, "UserUser") != len(efFollows) || tableCount(t, path, "Follows") != -1 {
		t.Fatal("the dry run changed the database")
	}

	url, stop := serveInProcess(t, "-addr", "127.0.0.1:0", "-db", path, "-secret", testSecret)
	checkFollowsOverGraphQL(t, url, efFollows)
	if tableCount(t, path, "UserUser") != -1 || tableCount(t, path, "__EFMigrationsHistory") != 1 {
		t.Error("after conversion UserUser should be gone and __EFMigrationsHistory kept")
	}
	// The server works on the converted database: a new follow, newest first.
	var tok strings.Builder
	if err := run(t.Context(), []string{"token", "-user", "4", "-db", path, "-secret", testSecret}, &tok, io.Discard, noEnv); err != nil {
		t.Fatal(err)
	}
	followAlice(t, url, strings.TrimSpace(tok.String()), 3)
	if err := stop(); err != nil {
		t.Errorf("the server stopped with %v", err)
	}
	apitest.CheckGraph(t, path)
}

// Shape 2 is adopted as it is: rows, dates and direction kept, what is
// missing added, and later EF-style writes still sort right.
func TestAdoptJoinEntityShape(t *testing.T) {
	ddl := efUsers + `
CREATE TABLE "Follows" (
    "FollowerId" INTEGER NOT NULL,
    "FolloweeId" INTEGER NOT NULL,
    "CreatedAt" TEXT NOT NULL,
    CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId"),
    CONSTRAINT "FK_Follows_Users_FolloweeId" FOREIGN KEY ("FolloweeId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_Follows_Users_FollowerId" FOREIGN KEY ("FollowerId") REFERENCES "Users" ("Id") ON DELETE RESTRICT);
CREATE INDEX "IX_Follows_FolloweeId" ON "Follows" ("FolloweeId");`
	// EF Core's text form trims trailing zeros: these sort wrongly as text
	// until padded (".5" vs ".1234567" vs none).
	times := []string{"2025-03-01 10:00:00", "2025-03-01 10:00:00.5", "2025-03-02 08:30:15.1234567", "2025-03-03 09:00:00.25", "2025-03-04 00:00:00", "2025-03-05 12:00:00.1"}
	var vals []string
	for i, p := range efFollows {
		vals = append(vals, "("+itoa(p[0])+", "+itoa(p[1])+", '"+times[i]+"')")
	}
	path := makeDB(t, ddl, `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES `+strings.Join(vals, ", ")+";")

	url, stop := serveInProcess(t, "-addr", "127.0.0.1:0", "-db", path, "-secret", testSecret)
	checkFollowsOverGraphQL(t, url, efFollows)

	// alice's followers newest first, with the dates EF wrote.
	r := postVars(t, url, "", `{ user(name: "alice") { followers(first: 1) { edges { followedAt node { name } } pageInfo { endCursor } } } }`, nil)
	b, _ := json.Marshal(r["data"])
	if !strings.Contains(string(b), `"followedAt":"2025-03-05T12:00:00.1000000Z","node":{"name":"erin"}`) {
		t.Errorf("alice's newest follower: %s", b)
	}
	// An EF Core app writing beside the server, in its trimmed form.
	raw := apitest.OpenRaw(t, path)
	if _, err := raw.Exec(`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (4, 1, '2025-03-06 00:00:00')`); err != nil {
		t.Fatal(err)
	}
	var stored string
	raw.QueryRow(`SELECT CreatedAt FROM Follows WHERE FollowerId = 4 AND FolloweeId = 1`).Scan(&stored)
	if stored != "2025-03-06 00:00:00.0000000" {
		t.Errorf("an EF-style insert is stored as %q, want it padded", stored)
	}
	if err := stop(); err != nil {
		t.Errorf("the server stopped with %v", err)
	}
	apitest.CheckGraph(t, path)
	if tableCount(t, path, "__EFMigrationsHistory") != 1 {
		t.Error("__EFMigrationsHistory was touched")
	}
}

// A conversion that would break a constraint is refused with the
// offending rows named, and the database is left exactly as it was.
func TestAdoptRefusesBadRows(t *testing.T) {
	pairs := append(slices.Clone(efFollows), [2]int{3, 3})
	path := makeDB(t, efConvention, userUserRows(pairs)+`
INSERT INTO "Users" ("Id", "Name") VALUES (6, 'ALICE');`)
	before, _ := os.ReadFile(path)

	var out strings.Builder
	err := run(t.Context(), []string{"migrate", "-db", path}, &out, &out, noEnv)
	if err == nil {
		t.Fatal("migrate succeeded on a database with a self-follow")
	}
	for _, want := range []string{"3 -> 3", "1 alice, 6 ALICE", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
	after, _ := os.ReadFile(path)
	if tableCount(t, path, "UserUser") != len(pairs) || tableCount(t, path, "Follows") != -1 || tableCount(t, path, "goose_db_version") != -1 {
		t.Error("the refused conversion changed the database")
	}
	if !bytes.Equal(before, after) {
		t.Error("the refused conversion changed the file's bytes")
	}
}
