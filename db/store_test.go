package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/db/pgtest"
)

// openTestStore opens a store on a fresh SQLite file in a temporary folder.
func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "follows.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// opener opens an empty store for a test.
type opener func(t *testing.T) *Store

// TestStore runs the store's behaviour tests against every dialect: SQLite
// always, on a fresh file each; SQL Server when MSSQL_DSN names one (its
// tables are emptied before each test); PostgreSQL when POSTGRES_DSN names
// a server (a fresh database each), and through PgBouncer in transaction
// mode when PGBOUNCER_DSN names one in front of it. Without them it says
// it skipped.
func TestStore(t *testing.T) {
	suite := map[string]func(*testing.T, opener){
		"SampleGraph":                     testSampleGraph,
		"DeleteUserRemovesBothDirections": testDeleteUserRemovesBothDirections,
		"FollowOutcomes":                  testFollowOutcomes,
		"SelfFollowRefusedByConstraint":   testSelfFollowRefusedByConstraint,
		"ConcurrentFollowsOfOnePair":      testConcurrentFollowsOfOnePair,
		"CreateUserNameTaken":             testCreateUserNameTaken,
		"PagingNewestFirst":               testPagingNewestFirst,
		"PagingBothWays":                  testPagingBothWays,
		"PagingBetweenCursors":            testPagingBetweenCursors,
		"BatchMixesWays":                  testBatchMixesWays,
		"UsersPageBothWays":               testUsersPageBothWays,
		"BatchMatchesSingleQueries":       testBatchMatchesSingleQueries,
		"CountsStayExact":                 testCountsStayExact,
		"BlocksAndDeactivation":           testBlocksAndDeactivation,
		"CountsReadAfterTheWrite":         testCountsReadAfterTheWrite,
		"DeleteUserWhileItFollows":        testDeleteUserWhileItFollows,
		"TimesRoundTrip":                  testTimesRoundTrip,
	}
	dialects := []struct {
		name string
		open opener
	}{
		{"sqlite", openTestStore},
		{"sqlserver", openSQLServer},
		{"postgres", openPostgres},
		{"pgbouncer", openPgBouncer},
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL store suite"))
			}
			if d.name == "pgbouncer" && !pgtest.PgBouncerAvailable() {
				t.Skip(pgtest.PgBouncerSkipMessage("the store suite through PgBouncer"))
			}
			for name, test := range suite {
				t.Run(name, func(t *testing.T) {
					if d.name != "sqlserver" { // SQL Server's tests share one database
						t.Parallel()
					}
					test(t, d.open)
				})
			}
		})
	}
}

const sqlserverSkip = "SKIPPED: the SQL Server store suite needs MSSQL_DSN (e.g. sqlserver://sa:pass@localhost:1433?database=follows_test)"

// openSQLServer opens the database MSSQL_DSN names and empties its tables.
func openSQLServer(t *testing.T) *Store {
	t.Helper()
	dsn := os.Getenv("MSSQL_DSN")
	if dsn == "" {
		t.Skip(sqlserverSkip)
	}
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open SQL Server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for _, q := range []string{`DELETE FROM Follows`, `DELETE FROM Blocks`, `DELETE FROM Users`} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("empty the tables: %v", err)
		}
	}
	return s
}

// openPostgres opens a store on a new database of the server POSTGRES_DSN
// names, dropped when the test ends.
func openPostgres(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.DSN(t, "the PostgreSQL store suite"))
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openPgBouncer opens a store as openPostgres does, through the PgBouncer
// PGBOUNCER_DSN names, listening for events on a direct connection as
// -db-listen has the server do.
func openPgBouncer(t *testing.T) *Store {
	t.Helper()
	pooled, direct := pgtest.PooledDSN(t, "the store suite through PgBouncer")
	s, err := Open(context.Background(), pooled, WithListen(direct))
	if err != nil {
		t.Fatalf("open PostgreSQL through PgBouncer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *Store) rawExec(q string, args ...any) (sql.Result, error) {
	return s.db.Exec(s.d.rebind(q), runner{s: s}.args(args)...)
}

func (s *Store) rawQueryRow(q string, args ...any) *sql.Row {
	return s.db.QueryRow(s.d.rebind(q), runner{s: s}.args(args)...)
}

// sampleStore is a store holding the sample graph, with its users' ids.
func sampleStore(t *testing.T, open opener) (*Store, map[string]int64) {
	t.Helper()
	s := open(t)
	ctx := context.Background()
	if ok, err := s.LoadSample(ctx); err != nil || !ok {
		t.Fatalf("load sample: %v, %v", ok, err)
	}
	ids := map[string]int64{}
	for _, name := range SampleUsers {
		u, err := s.UserByName(ctx, name)
		if err != nil {
			t.Fatalf("user %s: %v", name, err)
		}
		ids[name] = u.ID
	}
	return s, ids
}

// countsOf reads the users' kept follower and following counts.
func countsOf(t *testing.T, s *Store, ids ...int64) [][2]int {
	t.Helper()
	users, err := s.UsersByID(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	var counts [][2]int
	for _, u := range users {
		counts = append(counts, [2]int{u.FollowerCount, u.FollowingCount})
	}
	return counts
}

func names(edges []Edge) []string {
	var out []string
	for _, e := range edges {
		out = append(out, e.User.Name)
	}
	return out
}

func testSampleGraph(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()

	if counts, want := countsOf(t, s, ids["alice"], ids["dave"], ids["bob"]), [][2]int{{1, 2}, {2, 0}, {1, 2}}; !slices.Equal(counts, want) {
		t.Errorf("follower, following counts of alice, dave, bob = %v, want %v", counts, want)
	}

	pages, err := s.FollowPages(ctx, Followers, []PageQuery{{User: ids["dave"], First: 20}, {User: ids["alice"], First: 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(pages[0].Edges); !slices.Equal(got, []string{"bob", "carol"}) {
		t.Errorf("dave's followers = %v, want [bob carol] (newest first)", got)
	}
	if got := names(pages[1].Edges); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("alice's followers = %v, want [bob]", got)
	}
	for _, e := range pages[0].Edges {
		if e.At.IsZero() {
			t.Errorf("follow of dave by %s has no time", e.User.Name)
		}
	}

	following, err := s.FollowPages(ctx, Following, []PageQuery{{User: ids["alice"], First: 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(following[0].Edges); !slices.Equal(got, []string{"carol", "bob"}) {
		t.Errorf("alice follows %v, want [carol bob]", got)
	}

	mutual, err := s.MutualPages(ctx, []PageQuery{{User: ids["alice"], First: 20}, {User: ids["carol"], First: 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(mutual[0].Edges); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("alice's mutual follows = %v, want [bob]", got)
	}
	if got := names(mutual[1].Edges); len(got) != 0 {
		t.Errorf("carol's mutual follows = %v, want none", got)
	}
	mc, err := s.MutualCounts(ctx, []int64{ids["alice"], ids["carol"]})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mc, []int{1, 0}) {
		t.Errorf("mutual counts alice, carol = %v, want [1 0]", mc)
	}

	sugg, err := s.Suggestions(ctx, []SuggestionQuery{{User: ids["alice"], First: 10}, {User: ids["dave"], First: 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sugg[0]) != 1 || sugg[0][0].User.Name != "dave" || sugg[0][0].Via != 2 {
		t.Errorf("alice's suggestions = %+v, want [{dave 2}]", sugg[0])
	}
	if len(sugg[1]) != 0 {
		t.Errorf("dave's suggestions = %+v, want none", sugg[1])
	}
}

func testDeleteUserRemovesBothDirections(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	n, err := s.DeleteUser(ctx, ids["bob"])
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("deleted follows = %d, want 3", n)
	}
	var rows []string
	r, err := s.db.Query(s.d.rebind(`SELECT a.Name, b.Name FROM Follows f JOIN Users a ON a.Id = f.FollowerId JOIN Users b ON b.Id = f.FolloweeId ORDER BY 1, 2`))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var a, b string
		r.Scan(&a, &b)
		rows = append(rows, a+"->"+b)
	}
	if !slices.Equal(rows, []string{"alice->carol", "carol->dave"}) {
		t.Errorf("follows left = %v, want [alice->carol carol->dave]", rows)
	}
	if _, err := s.DeleteUser(ctx, ids["bob"]); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting bob again: %v, want ErrNotFound", err)
	}
}

func testFollowOutcomes(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	tests := []struct {
		name              string
		follower, followe int64
		wantErr           error
		wantAlready       bool
	}{
		{"new follow", ids["dave"], ids["alice"], nil, false},
		{"existing follow", ids["alice"], ids["bob"], nil, true},
		{"self", ids["alice"], ids["alice"], ErrSelfFollow, false},
		{"missing followee", ids["alice"], 999, ErrNotFound, false},
		{"missing follower", 999, ids["alice"], ErrFollowerNotFound, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := s.Follow(ctx, tc.follower, tc.followe)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (f.Already != tc.wantAlready || f.At.IsZero() || f.Follower.ID != tc.follower || f.Followee.ID != tc.followe) {
				t.Errorf("follow = %+v, want already %v, a time and both users", f, tc.wantAlready)
			}
		})
	}
	// The direction is the one asked for.
	states, err := s.Follows(ctx, []Pair{{ids["dave"], ids["alice"]}, {ids["alice"], ids["dave"]}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []FollowState{{Exists: true, NotificationsEnabled: true}, {}}; !slices.Equal(states, want) {
		t.Errorf("dave->alice, alice->dave = %+v, want %+v", states, want)
	}

	u, err := s.Unfollow(ctx, ids["dave"], ids["alice"])
	if err != nil || !u.Was || u.Followee.FollowerCount != 1 {
		t.Errorf("unfollow existing: %+v, %v; want it was, alice left with 1 follower", u, err)
	}
	u, err = s.Unfollow(ctx, ids["dave"], ids["alice"])
	if err != nil || u.Was {
		t.Errorf("unfollow again: %+v, %v; want it was not", u, err)
	}
	if _, err := s.Unfollow(ctx, ids["dave"], 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("unfollow missing user: %v, want ErrNotFound", err)
	}
}

func testSelfFollowRefusedByConstraint(t *testing.T, open opener) {
	s := open(t)
	u, err := s.CreateUser(context.Background(), "solo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.rawExec(`INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, u.ID, u.ID)
	if !errors.Is(s.d.classify(err), ErrSelfFollow) {
		t.Errorf("self-follow insert: %v, want a CK_Follows_NoSelfFollow violation", err)
	}
}

func testConcurrentFollowsOfOnePair(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, errs := 0, []error{}
	for range 20 {
		wg.Go(func() {
			f, err := s.Follow(ctx, ids["dave"], ids["carol"])
			already := f.Already
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if !already {
				created++
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 || created != 1 {
		t.Fatalf("20 concurrent follows: %d created, errors %v; want 1 and none", created, errs)
	}
	var n int
	s.rawQueryRow(`SELECT COUNT(*) FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, ids["dave"], ids["carol"]).Scan(&n)
	if n != 1 {
		t.Errorf("rows for dave->carol = %d, want 1", n)
	}
}

func testCreateUserNameTaken(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	if _, err := s.CreateUser(ctx, "Erin"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Erin", "erin", "ERIN"} {
		if _, err := s.CreateUser(ctx, name); !errors.Is(err, ErrNameTaken) {
			t.Errorf("create %q: %v, want ErrNameTaken", name, err)
		}
	}
	u, err := s.UserByName(ctx, "eRIN")
	if err != nil || u.Name != "Erin" {
		t.Errorf("user by name eRIN = %+v, %v; want Erin", u, err)
	}
}

// Follows made faster than the database clock ticks still list newest
// first, and paging with cursors returns each exactly once.
func testPagingNewestFirst(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	star, err := s.CreateUser(ctx, "star")
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for i := range 55 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("fan%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Follow(ctx, u.ID, star.ID); err != nil {
			t.Fatal(err)
		}
		made = append(made, u.Name)
	}
	slices.Reverse(made)

	var got []string
	after := Cursor{}
	for pages := 0; ; pages++ {
		if pages > 6 {
			t.Fatal("more than 6 pages of 10 for 55 followers")
		}
		p, err := s.FollowPages(ctx, Followers, []PageQuery{{User: star.ID, After: after, First: 10}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, names(p[0].Edges)...)
		if !p[0].HasNext {
			break
		}
		last := p[0].Edges[len(p[0].Edges)-1]
		after = Cursor{At: last.At, ID: last.User.ID}
	}
	if !slices.Equal(got, made) {
		t.Errorf("pages gave\n%v\nwant newest first\n%v", got, made)
	}
}

// One batch answers queries for many users, with and without cursors, the
// same as asking one at a time.
func testBatchMatchesSingleQueries(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	var qs []PageQuery
	for _, name := range SampleUsers {
		qs = append(qs, PageQuery{User: ids[name], First: 1}, PageQuery{User: ids[name], First: 5})
	}
	first, err := s.FollowPages(ctx, Following, []PageQuery{{User: ids["bob"], First: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := first[0].Edges[0]
	qs = append(qs, PageQuery{User: ids["bob"], After: Cursor{At: e.At, ID: e.User.ID}, First: 5})

	batch := followingAsAlone(t, s, qs)
	if got := names(batch[len(qs)-1].Edges); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("bob's following after %s = %v, want [alice]", e.User.Name, got)
	}
}

// The list statements seek each user's index range, each way: none may
// scan the follow table, or a popular account would cost in proportion to
// its size, and a backward page reads the index up from its cursor as a
// forward page reads it down.
func TestListStatementsSeekTheIndex(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	type statement struct {
		text     string
		way      pageWay
		from, to bool // compares the cursor it reads from, and up to
	}
	statements := map[string]statement{}
	for way, wayName := range []string{forward: "", backward: "backward "} {
		for kind, kindName := range map[listKind]string{listFollowers: "followers", listFollowing: "following", listMutual: "mutual"} {
			for _, st := range []statement{{}, {from: true}, {to: true}, {from: true, to: true}} {
				st.way = pageWay(way)
				st.text = pageBranch(sqliteListBranches[way][kind], st.from, st.to, 21)
				statements[fmt.Sprintf("%s%s from %v to %v", wayName, kindName, st.from, st.to)] = st
			}
		}
	}
	statements["suggestions"] = statement{text: sqliteSuggestionData}
	for name, st := range statements {
		args := []any{0, 1}
		if name == "suggestions" {
			args = []any{0, 100, 100, 1, 101, -1, 1, 1, 1}
		}
		for _, cursor := range []bool{st.from, st.to} {
			if cursor {
				args = append(args, "x", 2)
			}
		}
		if !st.from && !st.to && !strings.HasPrefix(name, "suggestion") {
			args = append(args, 2)
		}
		plan := queryPlan(t, s, st.text, args...)
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN f") || strings.HasPrefix(step, "SCAN Follows") || strings.HasPrefix(step, "SCAN b") {
				t.Errorf("%s scans the follow or block table: %v", name, plan)
			}
		}
		if name == "suggestions" {
			// The bound on suggestions' work (see SuggestionBudget): the
			// user's newest follows read in order off the covering index,
			// so that the LIMIT stops the walk. The one sort is the
			// running sum's, over the few rows the LIMIT let through.
			// The followees' lists, where not held, each one range of a
			// covering index.
			all := strings.Join(plan, "\n")
			newest := "SEARCH nf USING COVERING INDEX IX_Follows_FollowerId_CreatedAt_FolloweeId (FollowerId=?)"
			if strings.Count(all, newest) != 1 || strings.Count(all, "TEMP B-TREE") > 1 {
				t.Errorf("%s does not read the newest follows in the index's order: %v", name, plan)
			}
			lists := strings.Join(queryPlan(t, s, sqliteFollowingLists, "[1,2]"), "\n")
			if !strings.Contains(lists, "SEARCH f USING COVERING INDEX sqlite_autoindex_Follows_1 (FollowerId=?)") ||
				!strings.Contains(lists, "SEARCH u USING INTEGER PRIMARY KEY") || strings.Contains(lists, "SCAN u") {
				t.Errorf("the following lists are not each one range of a covering index: %v", lists)
			}
			continue
		}
		// Covering: a table lookup per row made fifty first pages four
		// times slower.
		if !strings.Contains(plan[0], "USING COVERING INDEX IX_Follows_") {
			t.Errorf("%s does not read only its covering index: %v", name, plan)
		}
		// Either way the index hands the rows over in the page's order,
		// so the LIMIT stops the seek; a sort would read the whole range.
		if strings.Contains(strings.Join(plan, "\n"), "TEMP B-TREE") {
			t.Errorf("%s sorts its rows rather than reading the index in order: %v", name, plan)
		}
		// Each cursor it compares bounds the seek on the index.
		k := listSeeks[st.way]
		for _, c := range []struct {
			given bool
			cmp   string
		}{{st.from, k.from}, {st.to, k.to}} {
			if bound := `,Follo\w+\)` + c.cmp + `\(\?,\?\)`; c.given && !regexp.MustCompile(bound).MatchString(plan[0]) {
				t.Errorf("%s does not seek by its cursor (%s): %v", name, bound, plan)
			}
		}
	}
	// Query.users reads its ids' range of the primary key, in order, either
	// way.
	for way, text := range s.q.listUsers {
		if plan := queryPlan(t, s, text, 1, 100, 11); len(plan) != 1 || plan[0] != "SEARCH u USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" {
			t.Errorf("users, way %d: %v, want one seek of the primary key in order", way, plan)
		}
	}
}

// queryPlan is the steps of SQLite's plan of a statement.
func queryPlan(t *testing.T, s *Store, text string, args ...any) []string {
	t.Helper()
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+text, args...)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		rows.Scan(&id, &parent, &unused, &detail)
		plan = append(plan, detail)
	}
	return plan
}

// Every way of changing follows keeps the counts on Users equal to a
// recount, and a count written around the triggers is found and repaired.
func testCountsStayExact(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	steps := []struct {
		name string
		do   func() error
	}{
		{"follow", func() error { _, err := s.Follow(ctx, ids["dave"], ids["alice"]); return err }},
		{"follow again", func() error { _, err := s.Follow(ctx, ids["dave"], ids["alice"]); return err }},
		{"unfollow", func() error { _, err := s.Unfollow(ctx, ids["alice"], ids["bob"]); return err }},
		{"unfollow again", func() error { _, err := s.Unfollow(ctx, ids["alice"], ids["bob"]); return err }},
		{"delete a user", func() error { _, err := s.DeleteUser(ctx, ids["carol"]); return err }},
		{"write around the store", func() error {
			_, err := s.rawExec(`INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, ids["alice"], ids["dave"])
			return err
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
			t.Fatalf("after %s: drift %+v, %v", st.name, drift, err)
		}
	}

	if _, err := s.rawExec(`UPDATE Users SET FollowerCount = 40 WHERE Id = ?`, ids["dave"]); err != nil {
		t.Fatal(err)
	}
	drift, err := s.CheckCounts(ctx, true)
	if err != nil || len(drift) != 1 || drift[0].User.Name != "dave" || drift[0].User.FollowerCount != 40 || drift[0].RecountFollowers != 2 {
		t.Fatalf("drift = %+v, %v; want dave kept 40, recounted 2", drift, err)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("after repair: drift %+v, %v", drift, err)
	}
}

// Blocks remove follows both ways and keep counts exact; deactivation takes
// a user out of lists and counts and reactivation puts it back as it was.
func testBlocksAndDeactivation(t *testing.T, open opener) {
	s, ids := sampleStore(t, open)
	ctx := context.Background()
	b, err := s.Block(ctx, ids["alice"], ids["bob"])
	if err != nil || b.RemovedFollows != 2 || b.Already || b.Blocker.FollowerCount != 0 {
		t.Fatalf("block = %+v, %v", b, err)
	}
	if _, err := s.Follow(ctx, ids["bob"], ids["alice"]); !errors.Is(err, ErrBlocked) {
		t.Errorf("follow while blocked: %v, want ErrBlocked", err)
	}
	if _, err := s.Block(ctx, ids["alice"], ids["alice"]); !errors.Is(err, ErrSelfBlock) {
		t.Errorf("self-block: %v", err)
	}
	exist, err := s.BlocksExist(ctx, []Pair{{ids["alice"], ids["bob"]}, {ids["bob"], ids["alice"]}})
	if err != nil || !slices.Equal(exist, []bool{true, false}) {
		t.Errorf("blocks alice->bob, bob->alice = %v, %v", exist, err)
	}
	if was, err := s.Unblock(ctx, ids["alice"], ids["bob"]); err != nil || !was {
		t.Errorf("unblock: %v, %v", was, err)
	}

	before, _ := s.FollowPages(ctx, Followers, []PageQuery{{User: ids["dave"], First: 10}}, nil)
	u, changed, err := s.SetDeactivated(ctx, ids["carol"], true)
	if err != nil || !changed || !u.Deactivated {
		t.Fatalf("deactivate: %+v %v %v", u, changed, err)
	}
	during, _ := s.FollowPages(ctx, Followers, []PageQuery{{User: ids["dave"], First: 10}}, nil)
	if got := names(during[0].Edges); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("dave's followers with carol deactivated = %v, want [bob]", got)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift with carol deactivated: %+v, %v", drift, err)
	}
	if _, changed, _ := s.SetDeactivated(ctx, ids["carol"], true); changed {
		t.Error("deactivating twice changed something")
	}
	if _, _, err := s.SetDeactivated(ctx, ids["carol"], false); err != nil {
		t.Fatal(err)
	}
	after, _ := s.FollowPages(ctx, Followers, []PageQuery{{User: ids["dave"], First: 10}}, nil)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("dave's followers after carol came back:\n%v\nwant\n%v", after, before)
	}
	if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("drift after reactivation: %+v, %v", drift, err)
	}

	// Deleting a user removes its blocks both ways in the same transaction
	// (BlockerId does not cascade).
	if _, err := s.Block(ctx, ids["alice"], ids["dave"]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Block(ctx, ids["bob"], ids["alice"]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, ids["alice"]); err != nil {
		t.Errorf("delete a user who blocks and is blocked: %v", err)
	}
	var left int
	s.rawQueryRow(`SELECT COUNT(*) FROM Blocks`).Scan(&left)
	if left != 0 {
		t.Errorf("%d block rows left after deleting alice", left)
	}
}

// The counts a follow or unfollow returns are the database's after the
// write, in its own transaction: twenty concurrent follows of one user
// return each follower count from 1 to 20 once, and twenty concurrent
// unfollows each from 19 to 0 once. (Adding one in Go to what was read
// before the write under-reports on a server database, where the others
// commit in between.)
func testCountsReadAfterTheWrite(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	star, err := s.CreateUser(ctx, "star")
	if err != nil {
		t.Fatal(err)
	}
	var fans []int64
	for i := range 20 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("fan%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		fans = append(fans, u.ID)
	}
	for _, step := range []struct {
		name      string
		do        func(fan int64) (followers, following int, err error)
		following int // each fan's, after
		want      []int
	}{
		{"follow", func(fan int64) (int, int, error) {
			f, err := s.Follow(ctx, fan, star.ID)
			return f.Followee.FollowerCount, f.Follower.FollowingCount, err
		}, 1, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		{"unfollow", func(fan int64) (int, int, error) {
			u, err := s.Unfollow(ctx, fan, star.ID)
			return u.Followee.FollowerCount, u.Follower.FollowingCount, err
		}, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
	} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var got []int
		for _, fan := range fans {
			wg.Go(func() {
				followers, following, err := step.do(fan)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("%s by %d: %v", step.name, fan, err)
					return
				}
				if following != step.following {
					t.Errorf("%s by %d: the fan's following count = %d, want %d", step.name, fan, following, step.following)
				}
				got = append(got, followers)
			})
		}
		wg.Wait()
		slices.Sort(got)
		if !slices.Equal(got, step.want) {
			t.Errorf("follower counts the %d concurrent %ss returned = %v, want each of %v once", len(fans), step.name, got, step.want)
		}
	}
}

// A user deleted while it follows others and is followed, concurrently:
// the delete succeeds (no follow by the user lands between its statements
// and trips a foreign key), and each follow either happened before it or
// finds a user gone, with the error a client is told for that.
func testDeleteUserWhileItFollows(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	var others []int64
	for i := range 8 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("other%d", i))
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, u.ID)
	}
	for round := range 8 {
		victim, err := s.CreateUser(ctx, fmt.Sprintf("victim%d", round))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		started := make(chan struct{}, len(others))
		for _, other := range others {
			wg.Go(func() {
				// A bounded storm: SQLite's writers wait for the write
				// lock without a queue, and an unbounded one starves some.
				for n := range 40 {
					select {
					case <-stop:
						return
					default:
					}
					// The victim follows and unfollows (its follow rows
					// are the ones that do not cascade); the other follows it.
					var err error
					if n%2 == 0 {
						_, err = s.Follow(ctx, victim.ID, other)
					} else {
						_, err = s.Unfollow(ctx, victim.ID, other)
					}
					if err != nil && !errors.Is(err, ErrFollowerNotFound) {
						t.Errorf("round %d: the victim's follow of %d: %v, want success or ErrFollowerNotFound", round, other, err)
					}
					if _, err := s.Follow(ctx, other, victim.ID); err != nil && !errors.Is(err, ErrNotFound) {
						t.Errorf("round %d: follow of the victim by %d: %v, want success or ErrNotFound", round, other, err)
					}
					if n == 0 {
						started <- struct{}{}
					}
				}
			})
		}
		for range others {
			<-started
		}
		if _, err := s.DeleteUser(ctx, victim.ID); err != nil {
			t.Errorf("round %d: delete a user who is following: %v", round, err)
		}
		close(stop)
		wg.Wait()
		if t.Failed() {
			return
		}
		var left int
		s.rawQueryRow(`SELECT COUNT(*) FROM Follows WHERE FollowerId = ? OR FolloweeId = ?`, victim.ID, victim.ID).Scan(&left)
		if left != 0 {
			t.Errorf("round %d: %d follow rows of the deleted user left", round, left)
		}
		if drift, err := s.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
			t.Errorf("round %d: drift %+v, %v", round, drift, err)
		}
	}
}

// A follow's time is the same wherever it is read: in the follow's
// outcome, in the list, in UTC, as the API prints it (seven fractional
// digits) and reads it back; and as a cursor it pages after exactly its
// entry.
func testTimesRoundTrip(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	var ids []int64
	for _, name := range []string{"star", "a", "b"} {
		u, err := s.CreateUser(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	star, a, b := ids[0], ids[1], ids[2]
	fa, err := s.Follow(ctx, a, star)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := s.Follow(ctx, b, star)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.FollowPages(ctx, Followers, []PageQuery{{User: star, First: 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := p[0].Edges; len(e) != 2 || !e[0].At.Equal(fb.At) || !e[1].At.Equal(fa.At) || e[0].At.Location() != time.UTC {
		t.Fatalf("listed %+v, want b at %v then a at %v, in UTC", e, fb.At, fa.At)
	}
	const printed = "2006-01-02T15:04:05.0000000Z07:00" // the Time scalar's form
	back, err := time.Parse(time.RFC3339Nano, fb.At.Format(printed))
	if err != nil || !back.Equal(fb.At) {
		t.Fatalf("%v printed and read back is %v, %v", fb.At, back, err)
	}
	next, err := s.FollowPages(ctx, Followers, []PageQuery{{User: star, First: 10, After: Cursor{At: back, ID: b}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(next[0].Edges); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after b's entry: %v, want [a]", got)
	}
}
