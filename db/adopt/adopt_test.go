package adopt_test

import (
	"bytes"
	"crypto/md5"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db/adopt/eftest"
)

// Adoption at the store level: EF Core databases made by hand as EF Core
// leaves them, on SQLite files and a real PostgreSQL (SQL Server when
// MSSQL_DSN names one), adopted as db.Open and db.PlanAdoption do it, and
// checked over GraphQL with the real handler.

// efFollows is the known graph, in both shapes.
var efFollows = eftest.Follows

// Shape 1 converts in place: every follow survives in its direction, EF's
// history table stays, UserUser goes only after the counts matched.
func TestAdoptConventionShape(t *testing.T) {
	path := eftest.SQLite(t, eftest.SQLiteConvention+"\n"+eftest.UserUserRows(efFollows))

	out, err := dryRun(t.Context(), path)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "database shape: convention") || !strings.Contains(out, "FollowerId = FollowersId") {
		t.Errorf("dry-run plan:\n%s", out)
	}
	if apitest.TableCount(t, path, "UserUser") != len(efFollows) || apitest.TableCount(t, path, "Follows") != -1 {
		t.Fatal("the dry run changed the database")
	}

	srv := serve(t, path)
	srv.checkFollows(t, efFollows)
	if apitest.TableCount(t, path, "UserUser") != -1 || apitest.TableCount(t, path, "__EFMigrationsHistory") != 1 {
		t.Error("after conversion UserUser should be gone and __EFMigrationsHistory kept")
	}
	// The server works on the converted database: a new follow, newest first.
	srv.followAlice(t, srv.token(t, 4), 3)
	srv.stop()
	apitest.CheckGraph(t, path)
}

// Shape 2 is adopted as it is: rows, dates and direction kept, what is
// missing added, and later EF-style writes still sort right.
func TestAdoptJoinEntityShape(t *testing.T) {
	ddl := eftest.SQLiteUsers + `
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
	path := eftest.SQLite(t, ddl+"\n"+`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES `+strings.Join(vals, ", ")+";")

	srv := serve(t, path)
	srv.checkFollows(t, efFollows)

	// alice's followers newest first, with the dates EF wrote.
	r := srv.post(t, "", `{ user(name: "alice") { followers(first: 1) { edges { followedAt node { name } } pageInfo { endCursor } } } }`, nil)
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
	srv.stop()
	apitest.CheckGraph(t, path)
	if apitest.TableCount(t, path, "__EFMigrationsHistory") != 1 {
		t.Error("__EFMigrationsHistory was touched")
	}
}

// A conversion that would break a constraint is refused with the
// offending rows named, and the database is left exactly as it was.
func TestAdoptRefusesBadRows(t *testing.T) {
	pairs := append(slices.Clone(efFollows), [2]int{3, 3})
	path := eftest.SQLite(t, eftest.SQLiteConvention+"\n"+eftest.UserUserRows(pairs)+`
INSERT INTO "Users" ("Id", "Name") VALUES (6, 'ALICE'), (7, 'BOB'), (8, 'Alice');`)
	before, _ := os.ReadFile(path)

	_, err := migrate(t.Context(), path)
	if err == nil {
		t.Fatal("migrate succeeded on a database with a self-follow")
	}
	for _, want := range []string{"3 -> 3", "share a name (names are unique without regard to case): 1 alice, 6 ALICE, 8 Alice\n",
		"share a name (names are unique without regard to case): 2 bob, 7 BOB", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
	after, _ := os.ReadFile(path)
	if apitest.TableCount(t, path, "UserUser") != len(pairs) || apitest.TableCount(t, path, "Follows") != -1 || apitest.TableCount(t, path, "goose_db_version") != -1 {
		t.Error("the refused conversion changed the database")
	}
	if !bytes.Equal(before, after) {
		t.Error("the refused conversion changed the file's bytes")
	}
}

// efFollowsFixture is an EF Core database with an explicit Follows, for
// adoption on SQLite and on PostgreSQL (written once: {int}, {bool},
// {time}, {false} and {true} become each dialect's), and what adopting it
// must do: fail saying each of wantErr, or succeed and pass after.
type efFollowsFixture struct {
	name    string
	follows string // CREATE TABLE "Follows" ... and any other DDL
	rows    string // INSERT INTO "Follows" ...
	wantErr []string
	// wantPlan are what the plan must say, dry run and real run alike.
	wantPlan []string
	after    func(t *testing.T, raw *sql.DB)
	// notOn is a dialect that cannot hold the fixture.
	notOn string
	// errOn, for a dialect, replaces wantErr.
	errOn map[string][]string
}

// fixtureRows are efFollows as Follows rows, with EF's times.
var fixtureRows = func() string {
	var vals []string
	for i, p := range efFollows {
		vals = append(vals, "("+itoa(p[0])+", "+itoa(p[1])+", '2025-03-0"+itoa(i+1)+" 10:00:00')")
	}
	return `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES ` + strings.Join(vals, ", ") + ";"
}()

// Correct keys the way EF Core writes them for the article's model
// (OnDelete(Restrict) on the follower's).
const fixtureKeys = `CONSTRAINT "FK_Follows_Users_FolloweeId" FOREIGN KEY ("FolloweeId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_Follows_Users_FollowerId" FOREIGN KEY ("FollowerId") REFERENCES "Users" ("Id") ON DELETE RESTRICT`

func fixtureFollows(extra string) string {
	return `CREATE TABLE "Follows" (
    "FollowerId" {int} NOT NULL,
    "FolloweeId" {int} NOT NULL,
    "CreatedAt" {time} NOT NULL,
    CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId"),
    ` + extra + `);
CREATE INDEX "IX_Follows_FolloweeId" ON "Follows" ("FolloweeId");`
}

// mustFail runs a statement that the adopted database must refuse.
func mustFail(t *testing.T, raw *sql.DB, what, stmt string) {
	t.Helper()
	if _, err := raw.Exec(stmt); err == nil {
		t.Errorf("%s succeeded after adoption: %s", what, stmt)
	}
}

var efFollowsFixtures = []efFollowsFixture{{
	// Finding 5: the settings an EF model may already map (NOT NULL, no
	// default), and an index under EF's name for one of the server's.
	name: "payload columns and EF's index names",
	follows: strings.Replace(fixtureFollows(`CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" <> "FolloweeId"),
    `+fixtureKeys), `"CreatedAt" {time} NOT NULL,`, `"CreatedAt" {time} NOT NULL,
    "Muted" {bool} NOT NULL,
    "NotificationsEnabled" {bool} NOT NULL,`, 1) + `
CREATE INDEX "IX_Follows_FollowerId_CreatedAt_FolloweeId" ON "Follows" ("FollowerId", "CreatedAt", "FolloweeId");`,
	rows: `INSERT INTO "Follows" VALUES (1, 2, '2025-03-01 10:00:00', {true}, {false}), (2, 1, '2025-03-02 10:00:00', {false}, {true}),
  (1, 3, '2025-03-03 10:00:00', {false}, {true}), (3, 4, '2025-03-04 10:00:00', {false}, {true}), (2, 4, '2025-03-05 10:00:00', {false}, {true}),
  (5, 1, '2025-03-06 10:00:00', {false}, {true});`,
	wantPlan: []string{"give Follows.Muted the default", "give Follows.NotificationsEnabled the default", "00003_blocks_mutes_deactivation.sql"},
	after: func(t *testing.T, raw *sql.DB) {
		// A writer that knows nothing of the settings, as the server.
		if _, err := raw.Exec(`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (4, 1, '2025-03-07 10:00:00')`); err != nil {
			t.Fatalf("a follow without its settings: %v", err)
		}
		var muted, notify, keptMuted int
		raw.QueryRow(`SELECT CAST("Muted" AS integer), CAST("NotificationsEnabled" AS integer) FROM "Follows" WHERE "FollowerId" = 4 AND "FolloweeId" = 1`).Scan(&muted, &notify)
		raw.QueryRow(`SELECT CAST("Muted" AS integer) FROM "Follows" WHERE "FollowerId" = 1 AND "FolloweeId" = 2`).Scan(&keptMuted)
		if muted != 0 || notify != 1 || keptMuted != 1 {
			t.Errorf("muted %d, notifications %d for a new follow (want 0, 1); the muted follow kept %d (want 1)", muted, notify, keptMuted)
		}
		mustFail(t, raw, "a self-follow", `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (2, 2, '2025-03-07 10:00:00')`)
	},
}, {
	// Finding 6: no CHECK at all; the rows obey it, so it is added.
	name:     "no self-follow CHECK",
	follows:  fixtureFollows(fixtureKeys),
	rows:     fixtureRows,
	wantPlan: []string{"add CK_Follows_NoSelfFollow CHECK (FollowerId <> FolloweeId)"},
	after: func(t *testing.T, raw *sql.DB) {
		mustFail(t, raw, "a self-follow", `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (2, 2, '2025-03-07 10:00:00')`)
	},
}, {
	// A CHECK saying the same, spelled otherwise and under no name, is
	// the CHECK.
	name:    "the CHECK spelled otherwise",
	follows: fixtureFollows(`CHECK ("FolloweeId" != "FollowerId"), ` + fixtureKeys),
	rows:    fixtureRows,
	after: func(t *testing.T, raw *sql.DB) {
		mustFail(t, raw, "a self-follow", `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (2, 2, '2025-03-07 10:00:00')`)
	},
}, {
	// The CHECK missing and a row it would refuse: refused, the row named.
	name:    "a self-follow row",
	follows: fixtureFollows(fixtureKeys),
	rows:    fixtureRows + `INSERT INTO "Follows" VALUES (3, 3, '2025-03-08 10:00:00');`,
	wantErr: []string{"a user following itself (Follows row): 3 -> 3", "nothing was changed"},
}, {
	// The name without the definition is no CHECK: refused, saying why.
	name: "a CHECK named CK_Follows_NoSelfFollow that checks something else",
	follows: fixtureFollows(`CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" > 0),
    ` + fixtureKeys),
	rows:    fixtureRows,
	wantErr: []string{"the CHECK named CK_Follows_NoSelfFollow says", "not FollowerId <> FolloweeId"},
}, {
	// The article's "don't": both keys cascade. The follower's becomes
	// NO ACTION.
	name: "both foreign keys cascading",
	follows: fixtureFollows(`CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" <> "FolloweeId"),
    CONSTRAINT "FK_Follows_Users_FolloweeId" FOREIGN KEY ("FolloweeId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_Follows_Users_FollowerId" FOREIGN KEY ("FollowerId") REFERENCES "Users" ("Id") ON DELETE CASCADE`),
	rows:     fixtureRows,
	wantPlan: []string{"make FollowerId's foreign key ON DELETE NO ACTION, not CASCADE"},
	// SQL Server refuses the second cascade path (1785).
	notOn: "sqlserver",
	after: func(t *testing.T, raw *sql.DB) {
		// erin follows alice: deleting erin is refused while her follow
		// is there, and deleting dave (followed, following no one)
		// takes his followers' rows with him.
		mustFail(t, raw, "deleting a user who follows someone", `DELETE FROM "Users" WHERE "Id" = 5`)
		if _, err := raw.Exec(`DELETE FROM "Users" WHERE "Id" = 4`); err != nil {
			t.Errorf("delete dave through the followee's cascade: %v", err)
		}
	},
}, {
	// No keys at all: added, the rows' users all being there.
	name:     "no foreign keys",
	follows:  fixtureFollows(`CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" <> "FolloweeId")`),
	rows:     fixtureRows,
	wantPlan: []string{"add FK_Follows_Users_FolloweeId", "add FK_Follows_Users_FollowerId"},
	after: func(t *testing.T, raw *sql.DB) {
		mustFail(t, raw, "a follow of a missing user", `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (2, 99, '2025-03-07 10:00:00')`)
	},
}, {
	// A column the server cannot fill: refused, saying why.
	name:    "a NOT NULL column without a default",
	follows: strings.Replace(fixtureFollows(fixtureKeys), `"CreatedAt" {time} NOT NULL,`, `"CreatedAt" {time} NOT NULL, "Note" {int} NOT NULL,`, 1),
	rows:    `INSERT INTO "Follows" VALUES (1, 2, '2025-03-01 10:00:00', 7);`,
	wantErr: []string{"Follows.Note is NOT NULL without a default"},
}, {
	// A later migration fails (the app has a Blocks table of its own):
	// the adoption before it is rolled back too.
	name:    "a later migration fails",
	follows: fixtureFollows(fixtureKeys) + `CREATE TABLE "Blocks" ("Id" {int} NOT NULL PRIMARY KEY, "Reason" {int} NULL);`,
	rows:    fixtureRows,
	wantErr: []string{"00003_blocks_mutes_deactivation.sql", "nothing was changed"},
}, {
	// Finding 1's shape: EF's convention table, converted in place (on
	// SQL Server the app had to make one key NO ACTION).
	name: "convention UserUser",
	follows: `CREATE TABLE "UserUser" (
    "FollowersId" {int} NOT NULL,
    "FollowingId" {int} NOT NULL,
    CONSTRAINT "PK_UserUser" PRIMARY KEY ("FollowersId", "FollowingId"),
    CONSTRAINT "FK_UserUser_Users_FollowersId" FOREIGN KEY ("FollowersId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_UserUser_Users_FollowingId" FOREIGN KEY ("FollowingId") REFERENCES "Users" ("Id") ON DELETE {cascade});
CREATE INDEX "IX_UserUser_FollowingId" ON "UserUser" ("FollowingId");`,
	rows:     eftest.UserUserRows(efFollows),
	wantPlan: []string{"database shape: convention", "copy 6 rows", "00002_follow_counters.sql"},
	after: func(t *testing.T, raw *sql.DB) {
		var n, alice int
		raw.QueryRow(`SELECT COUNT(*) FROM "Follows"`).Scan(&n)
		raw.QueryRow(`SELECT "FollowerCount" FROM "Users" WHERE "Id" = 1`).Scan(&alice)
		if n != len(efFollows) || alice != 2 {
			t.Errorf("%d follows, alice has %d followers; want %d and 2", n, alice, len(efFollows))
		}
		mustFail(t, raw, "reading UserUser", `SELECT COUNT(*) FROM "UserUser"`)
		mustFail(t, raw, "a self-follow", `INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt") VALUES (2, 2, '2025-03-07 10:00:00')`)
	},
}, {
	// A UserUser row the Follows keys would refuse (the app ran with
	// foreign keys off): refused, the row named.
	name: "convention UserUser with a follow of a missing user",
	follows: `CREATE TABLE "UserUser" (
    "FollowersId" {int} NOT NULL,
    "FollowingId" {int} NOT NULL,
    CONSTRAINT "PK_UserUser" PRIMARY KEY ("FollowersId", "FollowingId"));`,
	rows:    eftest.UserUserRows(append(slices.Clone(efFollows), [2]int{2, 42})),
	wantErr: []string{"a followed user that is not a user (UserUser row): 2 -> 42", "nothing was changed"},
}, {
	// A column of Users the server's sign-ups cannot fill: refused.
	name:    "Users with a NOT NULL column without a default",
	follows: `{addColumn "Rank" integer}` + fixtureFollows(fixtureKeys),
	rows:    fixtureRows,
	wantErr: []string{"Users.Rank is NOT NULL without a default: the server's sign-ups, which do not set it, would be refused"},
}, {
	// The counter an EF model may map already, without a default, and
	// wrong: the count migration recounts it, and it takes the server's
	// default where the dialect can give one (not SQLite: it would have
	// to rebuild Users).
	name:     "Users with FollowerCount already",
	follows:  `{addColumn "FollowerCount" integer}` + fixtureFollows(`CHECK ("FollowerId" <> "FolloweeId"), `+fixtureKeys),
	rows:     fixtureRows,
	wantPlan: []string{"give Users.FollowerCount the default 0"},
	errOn:    map[string][]string{"sqlite": {"Users.FollowerCount is NOT NULL without a default, which SQLite cannot add without rebuilding Users"}},
	after: func(t *testing.T, raw *sql.DB) {
		var alice int
		raw.QueryRow(`SELECT "FollowerCount" FROM "Users" WHERE "Id" = 1`).Scan(&alice)
		if alice != 2 {
			t.Errorf("alice's FollowerCount is %d after adoption, want 2 (recounted)", alice)
		}
		if _, err := raw.Exec(`INSERT INTO "Users" ("Name", "SecurityStamp") VALUES ('frank', 'x')`); err != nil {
			t.Errorf("a sign-up that leaves FollowerCount out: %v", err)
		}
	},
}}

// addColumnRE is a fixture's {addColumn "Name" type}: a NOT NULL column
// with no default on Users, which has rows, made as each dialect can.
var addColumnRE = regexp.MustCompile(`\{addColumn "(\w+)" (\w+)\}`)

var addColumnOn = map[string]string{
	"sqlite": `CREATE TABLE "Users_b" ("Id" INTEGER NOT NULL CONSTRAINT "PK_Users" PRIMARY KEY AUTOINCREMENT, "Name" TEXT NOT NULL, "$1" $2 NOT NULL);
INSERT INTO "Users_b" SELECT "Id", "Name", 7 FROM "Users";
DROP TABLE "Users";
ALTER TABLE "Users_b" RENAME TO "Users";
`,
	"postgres": `ALTER TABLE "Users" ADD "$1" $2 NOT NULL DEFAULT 7;
ALTER TABLE "Users" ALTER COLUMN "$1" DROP DEFAULT;
`,
	"sqlserver": `ALTER TABLE [Users] ADD [$1] $2 NOT NULL CONSTRAINT [DF_made] DEFAULT 7;
ALTER TABLE [Users] DROP CONSTRAINT [DF_made];
`,
}

// fixtureDialect writes a fixture for one dialect.
var fixtureDialect = map[string]*strings.Replacer{
	"sqlite": strings.NewReplacer("{int}", "INTEGER", "{bool}", "INTEGER", "{time}", "TEXT", "{false}", "0", "{true}", "1",
		"{cascade}", "CASCADE"),
	"postgres": strings.NewReplacer("{int}", "integer", "{bool}", "boolean", "{time}", "timestamp with time zone", "{false}", "false", "{true}", "true",
		"{cascade}", "CASCADE"),
	// SQL Server has no RESTRICT (EF writes NO ACTION for it) and
	// refuses a second cascade path.
	"sqlserver": strings.NewReplacer("{int}", "int", "{bool}", "bit", "{time}", "datetime2", "{false}", "0", "{true}", "1",
		"ON DELETE RESTRICT", "ON DELETE NO ACTION", "{cascade}", "NO ACTION"),
}

// Adopting an explicit Follows, on SQLite and PostgreSQL: what can be
// made right is, what cannot is refused saying why; a dry run says
// exactly what the real run then does, errors included; and a refused or
// failed adoption leaves the database exactly as it was, the SQLite
// file's bytes included, however far it got.
func TestAdoptFollowsByDefinition(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres", "sqlserver"} {
		t.Run(dialect, func(t *testing.T) {
			if dialect == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(eftest.MSSQLSkip)
			}
			for _, fx := range efFollowsFixtures {
				t.Run(fx.name, func(t *testing.T) {
					if fx.notOn == dialect {
						t.Skipf("not a database %s can hold", dialect)
					}
					testAdoptFixture(t, dialect, fx)
				})
			}
		})
	}
}

func testAdoptFixture(t *testing.T, dialect string, fx efFollowsFixture) {
	rep := fixtureDialect[dialect]
	ddl, rows := rep.Replace(addColumnRE.ReplaceAllString(fx.follows, addColumnOn[dialect])), rep.Replace(fx.rows)
	if e, ok := fx.errOn[dialect]; ok {
		fx.wantErr, fx.wantPlan = e, nil
	}
	var dsn string
	var raw *sql.DB
	var snapshot func() string
	if dialect == "sqlite" {
		dsn = eftest.SQLite(t, eftest.SQLiteUsers+"\n"+ddl+"\n"+rows)
		snapshot = func() string { b, _ := os.ReadFile(dsn); return fmt.Sprintf("%x", md5.Sum(b)) }
		var err error
		if raw, err = sql.Open("sqlite", dsn+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		// EF Core makes its SQLite files in WAL mode.
		if _, err := raw.Exec(`PRAGMA journal_mode = WAL`); err != nil {
			t.Fatal(err)
		}
	} else if dialect == "postgres" {
		dsn = eftest.Postgres(t, eftest.NpgsqlUsers+ddl+"\n"+rows)
		raw = apitest.OpenDSN(t, dsn)
		snapshot = func() string { return pgSnapshot(t, raw) }
	} else {
		dsn = eftest.SQLServer(t, eftest.MSSQLUsers+ddl+"\n"+rows)
		raw = eftest.OpenSQLServer(t, dsn)
		snapshot = func() string { return mssqlSnapshot(t, raw) }
	}
	before := snapshot()

	dryOut, dryErr := dryRun(t.Context(), dsn)
	if got := snapshot(); got != before {
		t.Fatalf("the dry run changed the database:\n%s\nthen\n%s", before, got)
	}
	realOut, realErr := migrate(t.Context(), dsn)
	if (dryErr == nil) != (realErr == nil) || (dryErr != nil && dryErr.Error() != realErr.Error()) {
		t.Fatalf("the dry run said\n%v\nand the real run\n%v", dryErr, realErr)
	}
	for _, want := range fx.wantPlan {
		if !strings.Contains(dryOut, want) || !strings.Contains(realOut, want) {
			t.Errorf("the plans do not both say %q:\n%s\n%s", want, dryOut, realOut)
		}
	}
	if fx.wantErr != nil {
		if realErr == nil {
			t.Fatalf("adopted; want it refused:\n%s", realOut)
		}
		for _, want := range fx.wantErr {
			if !strings.Contains(realErr.Error(), want) {
				t.Errorf("the error does not say %q:\n%v", want, realErr)
			}
		}
		if got := snapshot(); got != before {
			t.Errorf("the refused adoption changed the database:\n%s\nthen\n%s", before, got)
		}
		return
	}
	if realErr != nil {
		t.Fatalf("migrate: %v\n%s", realErr, realOut)
	}
	fx.after(t, raw)
	if dialect != "sqlserver" {
		apitest.CheckDSN(t, dsn)
	}
}

// pgSnapshot says a PostgreSQL database's tables, rows, columns,
// constraints and indexes.
func pgSnapshot(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintln(&b, eftest.PGTables(t, raw))
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1`,
		`SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1`,
		`SELECT string_agg(concat_ws(' ', "FollowerId", "FolloweeId", "CreatedAt"), ', ' ORDER BY 1) FROM "Follows"`,
	} {
		writeLines(&b, raw, q)
	}
	return b.String()
}

// writeLines writes the one-column rows of a catalogue query to b, or
// its error: a query of Follows fails while there is none (UserUser),
// which is part of the picture.
func writeLines(b *strings.Builder, raw *sql.DB, query string) {
	rows, err := raw.Query(query)
	if err != nil {
		fmt.Fprintln(b, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var s sql.NullString
		rows.Scan(&s)
		fmt.Fprintln(b, s.String)
	}
}
