package move_test

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db"
	"follows/graphcsv"
	"follows/move"
)

// fullGraph is a graph in export's folder form with something of every
// kind: stamps, an account an OpenID Connect provider signs in (alice, as
// its subject aliceSubject), a deactivated account (carol), a block (dave
// blocks erin), follows muted and silenced, and a last user id (6) past
// the highest id there is. Times are in microseconds, which every database
// keeps.
var fullGraph = map[string]string{
	graphcsv.ManifestFile: "Version,LastUserId,Users,Blocks,Follows\n2,6,5,1,5\n",
	graphcsv.UsersFile: `Id,Name,SecurityStamp,DeactivatedAt,ExternalId
1,alice,` + strings.Repeat("a1", 16) + `,,` + aliceSubject + `
2,bob,` + strings.Repeat("b2", 16) + `,,
3,carol,` + strings.Repeat("c3", 16) + `,2026-01-03 04:05:06.1234560,
4,dave,` + strings.Repeat("d4", 16) + `,,
5,erin,` + strings.Repeat("e5", 16) + `,,
`,
	graphcsv.BlocksFile: "BlockerId,BlockedId,CreatedAt\n4,5,2026-01-04 00:00:00.5000000\n",
	graphcsv.FollowsFile: `FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled
1,2,2026-01-01 00:00:01.0000000,0,1
1,3,2026-01-01 00:00:02.5000000,1,1
2,1,2026-01-01 00:00:03.1234560,0,0
3,4,2026-01-01 00:00:04.0000000,1,0
5,1,2026-01-01 00:00:05.0000000,0,1
`,
}

const aliceSubject = "auth0|alice"

// writeFolder writes files into a new folder and returns it.
func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readFolder reads the four files of an export folder.
func readFolder(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{graphcsv.ManifestFile, graphcsv.UsersFile, graphcsv.BlocksFile, graphcsv.FollowsFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

// importDir imports the folder dir into dsn, as import -dir does.
func importDir(t *testing.T, dsn, dir string) error {
	t.Helper()
	var out strings.Builder
	return move.Import(t.Context(), dsn, move.Source{Dir: dir}, &out, &out)
}

// exportDir exports dsn into a new folder, as export -dir does, and
// returns the files.
func exportDir(t *testing.T, dsn string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	var out strings.Builder
	if err := move.Export(t.Context(), dsn, dir, &out); err != nil {
		t.Fatalf("export: %v\n%s", err, &out)
	}
	return readFolder(t, dir)
}

// sameFiles reports each file of got that is not, byte for byte, want's.
func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %s differs:\n%s\nwant\n%s", what, name, got[name], w)
		}
	}
}

// A graph moves whole and comes back the same: imported into a SQLite
// file and exported, it is the files it came from, byte for byte; moved
// on into SQLite or PostgreSQL and exported again, the same; and from
// PostgreSQL back into SQLite, the same again. After the move the
// deactivated account is still hidden, the blocked user still cannot
// follow the blocker, settings and stamps are kept, the provider's token
// for alice's subject signs alice in (on a server that makes no accounts
// for unknown subjects), and the next sign-up gets an id past the last
// one ever given.
func TestExportImportRoundTrip(t *testing.T) { apitest.Each(t, testExportImportRoundTrip) }

func testExportImportRoundTrip(t *testing.T, on apitest.Database) {
	src := filepath.Join(t.TempDir(), "src.db")
	if err := importDir(t, src, writeFolder(t, fullGraph)); err != nil {
		t.Fatalf("import the folder: %v", err)
	}
	first := exportDir(t, src)
	sameFiles(t, "imported and exported", first, fullGraph)

	dst := on.NewDSN(t)
	if err := importDir(t, dst, writeFolder(t, first)); err != nil {
		t.Fatalf("import the export: %v", err)
	}
	second := exportDir(t, dst)
	sameFiles(t, "moved and exported again", second, first)
	if on == apitest.Postgres {
		back := filepath.Join(t.TempDir(), "back.db")
		if err := importDir(t, back, writeFolder(t, second)); err != nil {
			t.Fatalf("import PostgreSQL's export into SQLite: %v", err)
		}
		sameFiles(t, "SQLite -> PostgreSQL -> SQLite", exportDir(t, back), first)
	}
	checkMovedGraph(t, dst)
}

// checkMovedGraph checks, in the store, what fullGraph says after a move.
func checkMovedGraph(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	carol, err := store.UserByName(ctx, "carol")
	if err != nil || !carol.Deactivated {
		t.Errorf("carol after the move = %+v, %v; want deactivated", carol, err)
	}
	// alice follows bob and carol; carol, deactivated, is not counted.
	alice, err := store.UserByName(ctx, "alice")
	if err != nil || alice.FollowingCount != 1 || alice.SecurityStamp != strings.Repeat("a1", 16) {
		t.Errorf("alice after the move = %+v, %v; want following 1 (carol left out), her stamp", alice, err)
	}
	if u, err := store.UserByExternalID(ctx, aliceSubject); err != nil || u.ID != 1 {
		t.Errorf("the account of alice's subject after the move = %+v, %v; want alice's, id 1", u, err)
	}
	// What a server that makes no accounts asks of a provider's token.
	if id, _, err := store.AccountFor(ctx, aliceSubject, "someone", false); err != nil || id != 1 {
		t.Errorf("a sign-in as alice's subject after the move finds account %d, %v; want alice's, id 1", id, err)
	}
	if _, err := store.Follow(ctx, 5, 4); !errors.Is(err, db.ErrBlocked) {
		t.Errorf("erin follows dave, who blocks her, after the move: %v; want ErrBlocked", err)
	}
	settings, err := store.Follows(ctx, []db.Pair{{Follower: 1, Followee: 3}, {Follower: 2, Followee: 1}})
	if err != nil || !settings[0].Exists || !settings[0].Muted || !settings[0].NotificationsEnabled || settings[1].Muted || settings[1].NotificationsEnabled {
		t.Errorf("follow settings after the move = %+v, %v; want 1->3 muted, 2->1 silenced", settings, err)
	}
	if u, err := store.CreateUser(ctx, "newcomer"); err != nil || u.ID != 7 {
		t.Errorf("the next sign-up after the move = %+v, %v; want id 7", u, err)
	}
	if drift, err := store.CheckCounts(ctx, false); err != nil || len(drift) > 0 {
		t.Errorf("counts drift after the move: %+v, %v", drift, err)
	}
}

// copy moves a graph straight from one database into another, reporting
// progress, and the copy exports as the source does.
func TestCopy(t *testing.T) { apitest.Each(t, testCopy) }

func testCopy(t *testing.T, on apitest.Database) {
	src := filepath.Join(t.TempDir(), "src.db")
	if err := importDir(t, src, writeFolder(t, fullGraph)); err != nil {
		t.Fatal(err)
	}
	dst := on.NewDSN(t)
	var out, errs strings.Builder
	if err := move.Copy(t.Context(), src, dst, &out, &errs); err != nil {
		t.Fatalf("copy: %v\n%s", err, &errs)
	}
	if !strings.Contains(out.String(), "copied 5 users, 1 blocks and 5 follows") || !strings.Contains(errs.String(), "5 follows") {
		t.Errorf("copy said %q, progress %q", &out, &errs)
	}
	sameFiles(t, "copied and exported", exportDir(t, dst), fullGraph)
	checkMovedGraph(t, dst)
	if err := move.Copy(t.Context(), src, src, &out, &errs); err == nil {
		t.Error("copy onto its own source succeeded")
	}
}

// export reads an EF Core database as it is and changes nothing in it:
// the file's bytes are the same afterwards, UserUser is still there, and
// the export holds its users and follows, direction kept.
func TestExportLeavesAnEFCoreDatabaseAlone(t *testing.T) {
	path := makeDB(t, efConvention, userUserRows(efFollows))
	sum := func() [16]byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return md5.Sum(b)
	}
	before := sum()
	files := exportDir(t, path)
	if after := sum(); after != before {
		t.Errorf("export changed the EF Core file: md5 %x before, %x after", before, after)
	}
	if apitest.TableCount(t, path, "UserUser") != len(efFollows) || apitest.TableCount(t, path, "goose_db_version") != -1 {
		t.Error("export adopted or migrated the EF Core database")
	}
	if !strings.HasPrefix(files[graphcsv.ManifestFile], "Version,LastUserId,Users,Blocks,Follows\n2,5,5,0,6\n") {
		t.Errorf("manifest.csv:\n%s", files[graphcsv.ManifestFile])
	}
	if !strings.Contains(files[graphcsv.UsersFile], "\n5,erin,,,\n") {
		t.Errorf("users.csv:\n%s", files[graphcsv.UsersFile])
	}
	for _, p := range efFollows {
		if !strings.Contains(files[graphcsv.FollowsFile], "\n"+itoa(p[0])+","+itoa(p[1])+",") {
			t.Errorf("follows.csv has no %d -> %d:\n%s", p[0], p[1], files[graphcsv.FollowsFile])
		}
	}
	// The export imports: the move needs no adoption of the source.
	dst := filepath.Join(t.TempDir(), "dst.db")
	if err := importDir(t, dst, writeFolder(t, files)); err != nil {
		t.Fatalf("import the EF Core export: %v", err)
	}
	apitest.CheckGraph(t, dst)
}

// A folder is refused, saying why, when its manifest says a version this
// build does not know, when it has none, and when a file is cut short.
func TestImportRefusesWhatItCannotRead(t *testing.T) {
	with := func(name, text string) map[string]string {
		files := map[string]string{}
		for k, v := range fullGraph {
			files[k] = v
		}
		if text == "" {
			delete(files, name)
		} else {
			files[name] = text
		}
		return files
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a later version", with(graphcsv.ManifestFile, "Version,LastUserId,Users,Blocks,Follows,Likes\n3,6,5,1,5,9\n"), `format version "3": this build reads version 2`},
		{"no manifest", with(graphcsv.ManifestFile, ""), "has no manifest.csv"},
		{"a file cut short", with(graphcsv.FollowsFile, strings.Join(strings.Split(fullGraph[graphcsv.FollowsFile], "\n")[:3], "\n")+"\n"), "follows.csv: holds 2 rows, the manifest says 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst.db")
			err := importDir(t, dst, writeFolder(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import = %v, want %q", err, tc.want)
			}
		})
	}
}

// The files an earlier export wrote (version 1: users.csv, follows.csv and
// users.sequence.csv beside them) still import: stamps and the last id
// kept, every account active, every follow with the default settings.
func TestImportReadsVersion1Exports(t *testing.T) {
	dir := writeFolder(t, map[string]string{
		"users.csv":          "Id,Name,SecurityStamp\n1,alice," + strings.Repeat("a1", 16) + "\n2,bob," + strings.Repeat("b2", 16) + "\n",
		"follows.csv":        "FollowerId,FolloweeId,CreatedAt\n1,2,2026-01-01 00:00:01.0000000\n",
		"users.sequence.csv": "LastUserId\n9\n",
	})
	dst := filepath.Join(t.TempDir(), "dst.db")
	var out strings.Builder
	if err := move.Import(t.Context(), dst, move.Source{Users: filepath.Join(dir, "users.csv"), Follows: filepath.Join(dir, "follows.csv")}, &out, &out); err != nil {
		t.Fatalf("import a version 1 export: %v", err)
	}
	files := exportDir(t, dst)
	if want := "Version,LastUserId,Users,Blocks,Follows\n2,9,2,0,1\n"; files[graphcsv.ManifestFile] != want {
		t.Errorf("manifest.csv:\n%s\nwant\n%s", files[graphcsv.ManifestFile], want)
	}
	if want := "FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n1,2,2026-01-01 00:00:01.0000000,0,1\n"; files[graphcsv.FollowsFile] != want {
		t.Errorf("follows.csv:\n%s\nwant\n%s", files[graphcsv.FollowsFile], want)
	}
	if want := "2,bob," + strings.Repeat("b2", 16) + ",,\n"; !strings.HasSuffix(files[graphcsv.UsersFile], want) {
		t.Errorf("users.csv:\n%s", files[graphcsv.UsersFile])
	}
}

// On PostgreSQL too, export reads an EF Core database made by Npgsql as it
// is, in both shapes, and changes nothing: no table is added or dropped,
// no row changes, and the join entity's times come out as EF wrote them.
func TestExportLeavesAnNpgsqlDatabaseAlone(t *testing.T) {
	for _, tc := range []struct {
		name, ddl, rows, want string
	}{
		{"convention", npgsqlConvention, userUserRows(efFollows), "\n5,1,"},
		{"join entity", npgsqlJoinEntity, `INSERT INTO "Follows" VALUES (1, 2, '2025-03-01 10:00:00.5+00'), (5, 1, '2025-03-02 00:00:00+00');`,
			"\n5,1,2025-03-02 00:00:00.0000000,0,1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := makePostgresDB(t, tc.ddl+tc.rows)
			raw := apitest.OpenDSN(t, dsn)
			before := pgTables(t, raw)
			files := exportDir(t, dsn)
			if after := pgTables(t, raw); !maps.Equal(before, after) {
				t.Errorf("export changed the database: tables %v before, %v after", before, after)
			}
			if !strings.Contains(files[graphcsv.FollowsFile], tc.want) || !strings.HasPrefix(files[graphcsv.ManifestFile], "Version,LastUserId,Users,Blocks,Follows\n2,5,5,0,") {
				t.Errorf("exported:\n%s%s", files[graphcsv.ManifestFile], files[graphcsv.FollowsFile])
			}
		})
	}
}

// A deleted user's token stays dead when the graph moves: export carries
// the highest id ever given and each account's stamp, so after import the
// next sign-up does not get the deleted user's id, the old token does not
// act as anyone, and the other users' tokens still work.
func TestTokensSurviveOnlyTheirAccountsThroughExportImport(t *testing.T) {
	src := apitest.Start(t)
	var users []apitest.Account
	for i := range 5 {
		users = append(users, src.CreateUser(fmt.Sprintf("u%d", i+1)))
	}
	if users[4].ID != "5" {
		t.Fatalf("the fifth user has id %s", users[4].ID)
	}
	if r := src.Do(users[4].Token, `mutation { deleteUser(input: {userId: "5"}) { deletedFollows } }`, nil); r.Errors != nil {
		t.Fatalf("delete user 5: %v", r.Errors)
	}
	dst := filepath.Join(t.TempDir(), "dst.db")
	if err := importDir(t, dst, writeFolder(t, exportDir(t, src.DSN))); err != nil {
		t.Fatalf("import: %v", err)
	}
	moved := apitest.StartOn(t, dst)
	data := func(token, query string) string {
		r := moved.Do(token, query, nil)
		if r.Code() != "" {
			return r.Code()
		}
		return string(r.Data)
	}
	if got := data("", `mutation { createUser(input: {name: "newcomer"}) { user { id } } }`); got != `{"createUser":{"user":{"id":"6"}}}` {
		t.Errorf("the next sign-up after the move: %s, want id 6, not the deleted user's 5", got)
	}
	if got := data(users[4].Token, `{ viewer { name } }`); got != `{"viewer":null}` {
		t.Errorf("the deleted user's token after the move: %s, want no viewer", got)
	}
	if got := data(users[4].Token, `mutation { follow(input: {userId: "1"}) { alreadyFollowing } }`); got != "UNAUTHENTICATED" {
		t.Errorf("the deleted user's token follows after the move: %s", got)
	}
	if got := data(users[0].Token, `{ viewer { name } }`); got != `{"viewer":{"name":"u1"}}` {
		t.Errorf("user 1's token after the move: %s, want u1", got)
	}
}
