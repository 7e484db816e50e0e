// Package mssqltest gives a test a SQL Server database of its own, on the
// server that MSSQL_DSN names, as pgtest does for PostgreSQL. No SQL
// Server runs where the project is built; tests that need one skip
// without it, saying so.
package mssqltest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/microsoft/go-mssqldb" // the "sqlserver" database/sql driver
)

// Env is the variable that names the server: a sqlserver:// URL whose
// login may create databases.
const Env = "MSSQL_DSN"

// NewDatabase makes a new, empty database named prefix and random hex on
// the server Env names, dropped when the test ends, and returns its DSN.
// Without Env the test is skipped with skip.
func NewDatabase(t testing.TB, prefix, skip string) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skip(skip)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	admin, err := sql.Open("sqlserver", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
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
	return u.String()
}
