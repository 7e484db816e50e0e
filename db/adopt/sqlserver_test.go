package adopt_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"follows/db/adopt/eftest"
)

// mssqlSnapshot says a SQL Server database's tables and their rows,
// columns (type, length, collation), constraints (definitions and delete
// actions) and indexes. Its queries keep to SQL Server 2016 (no
// STRING_AGG or CONCAT_WS), the server's floor.
func mssqlSnapshot(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var b strings.Builder
	var tables []string
	rows, err := raw.Query(`SELECT name FROM sys.tables ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		var c int
		raw.QueryRow(`SELECT COUNT(*) FROM [` + n + `]`).Scan(&c)
		fmt.Fprintf(&b, "%s %d\n", n, c)
	}
	for _, q := range []string{
		`SELECT CONCAT(OBJECT_NAME(object_id), '.', name, ' ', TYPE_NAME(user_type_id), ' ', max_length, ' ', collation_name, ' ', is_nullable, ' ', OBJECT_DEFINITION(default_object_id)) FROM sys.columns WHERE OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(parent_object_id), ' ', name, ' ', type_desc, ' ', OBJECT_DEFINITION(object_id)) FROM sys.objects WHERE parent_object_id <> 0 ORDER BY 1`,
		`SELECT CONCAT(name, ' ', delete_referential_action_desc) FROM sys.foreign_keys ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(object_id), ' ', name, ' ', is_unique) FROM sys.indexes WHERE name IS NOT NULL AND OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT CONCAT(FollowerId, ' ', FolloweeId, ' ', CONVERT(nvarchar(27), CreatedAt, 121)) FROM Follows ORDER BY FollowerId, FolloweeId`,
		`SELECT CONCAT(Id, ' ', Name) FROM Users ORDER BY Id`,
	} {
		writeLines(&b, raw, q)
	}
	return b.String()
}

// mssqlShapes are the article's database in both its shapes, as EF Core
// makes them on SQL Server, with the known graph.
var mssqlShapes = map[string]string{
	"convention UserUser": eftest.MSSQLConvention + eftest.UserUserRows(efFollows),
	"explicit Follow":     eftest.MSSQLJoinEntity + fixtureRows,
}

// nameColumn says Users.Name's type, length in bytes and collation.
func nameColumn(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var typ, collation string
	var length int
	if err := raw.QueryRow(`SELECT TYPE_NAME(user_type_id), max_length, collation_name FROM sys.columns
WHERE object_id = OBJECT_ID(N'Users') AND name = N'Name'`).Scan(&typ, &length, &collation); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %d %s", typ, length, collation)
}

// Finding 1: the article's own database, Name nvarchar(max) without an
// index, is adopted in both shapes: the dry run says Name is altered
// before IX_Users_Name is made and changes nothing; the real run leaves
// Name nvarchar(450) in the case-insensitive collation under a unique
// IX_Users_Name, which refuses ALICE beside alice; the server serves the
// graph; EF's IX_Follows_FolloweeId is kept.
func TestAdoptSQLServerArticleDatabase(t *testing.T) {
	for shape, ddl := range mssqlShapes {
		t.Run(shape, func(t *testing.T) {
			dsn := eftest.SQLServer(t, ddl)
			raw := eftest.OpenSQLServer(t, dsn)
			before := mssqlSnapshot(t, raw)
			out, err := dryRun(t.Context(), dsn)
			if err != nil {
				t.Fatalf("dry run: %v\n%s", err, out)
			}
			const says = "make Users.Name nvarchar(450) COLLATE Latin1_General_100_CI_AS NOT NULL (it is nvarchar(max) COLLATE "
			if !strings.Contains(out, says) {
				t.Errorf("the plan does not say %q:\n%s", says, out)
			}
			if after := mssqlSnapshot(t, raw); after != before {
				t.Fatalf("the dry run changed the database:\n%s\nthen\n%s", before, after)
			}
			if out, err := migrate(t.Context(), dsn); err != nil {
				t.Fatalf("migrate: %v\n%s", err, out)
			}
			if got, want := nameColumn(t, raw), "nvarchar 900 Latin1_General_100_CI_AS"; got != want {
				t.Errorf("Users.Name after adoption: %s, want %s", got, want)
			}
			var unique bool
			if err := raw.QueryRow(`SELECT is_unique FROM sys.indexes WHERE object_id = OBJECT_ID(N'Users') AND name = N'IX_Users_Name'`).Scan(&unique); err != nil || !unique {
				t.Errorf("IX_Users_Name unique: %v %v", unique, err)
			}
			if _, err := raw.Exec(`INSERT INTO Users (Name, SecurityStamp) VALUES (N'frank', N'x')`); err != nil {
				t.Fatalf("a new name: %v", err)
			}
			mustFail(t, raw, "ALICE beside alice", `INSERT INTO Users (Name, SecurityStamp) VALUES (N'ALICE', N'x')`)
			if shape == "explicit Follow" {
				var n int
				raw.QueryRow(`SELECT COUNT(*) FROM sys.indexes WHERE object_id = OBJECT_ID(N'Follows') AND name = N'IX_Follows_FolloweeId'`).Scan(&n)
				if n != 1 {
					t.Error("EF's IX_Follows_FolloweeId is gone after adoption")
				}
			}
			srv := serve(t, dsn)
			srv.checkFollows(t, efFollows)
		})
	}
}

// What SQL Server's adoption refuses of the article's database, naming
// the rows or the column, leaving the database as it was: two names one
// in the case-insensitive collation (on a case-sensitive column, where
// the app could write both), a name nvarchar(450) cannot hold, and a
// CreatedAt made datetime. An app's unique index on Name in a
// case-sensitive collation is dropped and made again by migration 1.
func TestAdoptSQLServerNames(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, tc := range []struct {
		name, ddl string
		wantErr   []string
		wantPlan  []string
	}{{
		name:    "Alice and alice",
		ddl:     strings.Replace(eftest.MSSQLConvention, `nvarchar(max) NOT NULL`, `nvarchar(max) COLLATE Latin1_General_100_CS_AS NOT NULL`, 1) + eftest.UserUserRows(efFollows) + `INSERT INTO [Users] ([Name]) VALUES (N'Alice');`,
		wantErr: []string{"two users share a name (names are unique without regard to case): 1 alice, 6 Alice", "nothing was changed"},
	}, {
		name:    "a 500-character name",
		ddl:     eftest.MSSQLJoinEntity + fixtureRows + `INSERT INTO [Users] ([Name]) VALUES (N'` + long + `');`,
		wantErr: []string{"a name longer than the 450 characters Users.Name holds", "6 " + long[:40] + "... (500 characters)"},
	}, {
		name:    "CreatedAt datetime",
		ddl:     strings.Replace(eftest.MSSQLJoinEntity, `[CreatedAt] datetime2 NOT NULL`, `[CreatedAt] datetime NOT NULL`, 1) + fixtureRows,
		wantErr: []string{"Follows.CreatedAt is datetime, not datetime2", "ALTER TABLE [Follows] ALTER COLUMN [CreatedAt] datetime2(7) NOT NULL"},
	}, {
		name: "an app's unique index on a case-sensitive Name",
		ddl: strings.Replace(eftest.MSSQLJoinEntity, `nvarchar(max) NOT NULL`, `nvarchar(450) COLLATE Latin1_General_100_CS_AS NOT NULL`, 1) +
			`CREATE UNIQUE INDEX [IX_Users_Name] ON [Users] ([Name]);` + fixtureRows,
		wantPlan: []string{"drop the index IX_Users_Name on Users (Name)", "(it is nvarchar(450) COLLATE Latin1_General_100_CS_AS NOT NULL)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := eftest.SQLServer(t, tc.ddl)
			raw := eftest.OpenSQLServer(t, dsn)
			before := mssqlSnapshot(t, raw)
			out, err := migrate(t.Context(), dsn)
			for _, want := range tc.wantPlan {
				if !strings.Contains(out, want) {
					t.Errorf("the plan does not say %q:\n%s", want, out)
				}
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("migrate: %v\n%s", err, out)
				}
				if got, want := nameColumn(t, raw), "nvarchar 900 Latin1_General_100_CI_AS"; got != want {
					t.Errorf("Users.Name after adoption: %s, want %s", got, want)
				}
				mustFail(t, raw, "ALICE beside alice", `INSERT INTO Users (Name, SecurityStamp) VALUES (N'ALICE', N'x')`)
				return
			}
			if err == nil {
				t.Fatalf("adopted; want it refused:\n%s", out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if after := mssqlSnapshot(t, raw); after != before {
				t.Errorf("the refused adoption changed the database:\n%s\nthen\n%s", before, after)
			}
		})
	}
}
