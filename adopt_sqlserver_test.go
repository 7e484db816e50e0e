package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
)

// The EF Core database on SQL Server, as `dotnet ef migrations script`
// writes it for the article's model with EF Core 8 (the unique index on
// Name makes it nvarchar(450)); users get their ids from the identity.
const mssqlUsers = `CREATE TABLE [__EFMigrationsHistory] (
    [MigrationId] nvarchar(150) NOT NULL,
    [ProductVersion] nvarchar(32) NOT NULL,
    CONSTRAINT [PK___EFMigrationsHistory] PRIMARY KEY ([MigrationId]));
CREATE TABLE [Users] (
    [Id] int NOT NULL IDENTITY,
    [Name] nvarchar(450) NOT NULL,
    CONSTRAINT [PK_Users] PRIMARY KEY ([Id]));
INSERT INTO [__EFMigrationsHistory] VALUES (N'20250101000000_Initial', N'8.0.8');
INSERT INTO [Users] ([Name]) VALUES (N'alice'), (N'bob'), (N'carol'), (N'dave'), (N'erin');
`

const mssqlSkip = "SKIPPED: adoption on SQL Server needs MSSQL_DSN (e.g. sqlserver://sa:pass@localhost:1433?database=master); its SQLite and PostgreSQL twins ran"

// makeSQLServerDB makes a new database on the server MSSQL_DSN names,
// dropped when the test ends, holds ddl in it, and returns its DSN.
func makeSQLServerDB(t *testing.T, ddl string) string {
	t.Helper()
	base := os.Getenv("MSSQL_DSN")
	if base == "" {
		t.Skip(mssqlSkip)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("MSSQL_DSN: %v", err)
	}
	admin, err := sql.Open("sqlserver", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := "follows_adopt_" + hex.EncodeToString(b)
	// A database name cannot be a parameter; this one is ours.
	if _, err := admin.Exec("CREATE DATABASE [" + name + "]"); err != nil {
		admin.Close()
		t.Fatalf("create a test database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		admin.Exec("ALTER DATABASE [" + name + "] SET SINGLE_USER WITH ROLLBACK IMMEDIATE")
		if _, err := admin.Exec("DROP DATABASE [" + name + "]"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	q := u.Query()
	q.Set("database", name)
	u.RawQuery = q.Encode()
	dsn := u.String()
	raw := openSQLServerRaw(t, dsn)
	if _, err := raw.Exec(ddl); err != nil {
		t.Fatalf("make the EF Core database: %v", err)
	}
	return dsn
}

func openSQLServerRaw(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlserver", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// mssqlSnapshot says a SQL Server database's tables and their rows,
// columns, constraints (definitions and delete actions) and indexes.
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
		`SELECT CONCAT(OBJECT_NAME(object_id), '.', name, ' ', TYPE_NAME(user_type_id), ' ', is_nullable, ' ', OBJECT_DEFINITION(default_object_id)) FROM sys.columns WHERE OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(parent_object_id), ' ', name, ' ', type_desc, ' ', OBJECT_DEFINITION(object_id)) FROM sys.objects WHERE parent_object_id <> 0 ORDER BY 1`,
		`SELECT CONCAT(name, ' ', delete_referential_action_desc) FROM sys.foreign_keys ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(object_id), ' ', name) FROM sys.indexes WHERE name IS NOT NULL AND OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT STRING_AGG(CONCAT_WS(' ', FollowerId, FolloweeId, CreatedAt), ', ') WITHIN GROUP (ORDER BY FollowerId, FolloweeId) FROM Follows`,
	} {
		writeLines(&b, raw, q)
	}
	return b.String()
}
