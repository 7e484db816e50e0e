package db

import (
	"context"
	"errors"
	"os"
	"testing"

	"follows/db/pgtest"
)

// eachDialect runs fn on a fresh store of every dialect: SQLite always,
// PostgreSQL when POSTGRES_DSN names a server, SQL Server when MSSQL_DSN
// names a database (emptied first); the others skip, saying so.
func eachDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, d := range []struct {
		name string
		open opener
	}{{"sqlite", openTestStore}, {"postgres", openPostgres}, {"sqlserver", openSQLServer}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL run"))
			}
			fn(t, d.open(t))
		})
	}
}

// A user that another application's table still refers to cannot be
// deleted, and the store says why rather than failing with an unclassified
// driver error (which a client would see as INTERNAL) or "not found".
func TestDeleteUserStillReferenced(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, err := s.CreateUser(ctx, "author")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.rawExec(`CREATE TABLE Posts (Id int NOT NULL PRIMARY KEY, AuthorId int NOT NULL REFERENCES Users (Id))`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.rawExec(`DROP TABLE Posts`) })
		if _, err := s.rawExec(`INSERT INTO Posts (Id, AuthorId) VALUES (1, ?)`, a.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.DeleteUser(ctx, a.ID)
		if !errors.Is(err, ErrStillReferenced) || errors.Is(err, ErrNotFound) {
			t.Fatalf("delete a user a post refers to: %v, want ErrStillReferenced", err)
		}
		if _, err := s.UserByName(ctx, "author"); err != nil {
			t.Errorf("the user is gone after the refused delete: %v", err)
		}
	})
}
