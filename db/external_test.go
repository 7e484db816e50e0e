package db

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"follows/db/pgtest"
)

// TestExternalUsers runs the tests of accounts kept by a provider's
// subject on SQLite, on PostgreSQL when POSTGRES_DSN names a server, and
// on SQL Server when MSSQL_DSN names one (emptied first).
func TestExternalUsers(t *testing.T) {
	suite := map[string]func(*testing.T, *Store){
		"ProvisionOnce":         testProvisionOnce,
		"ProvisionNameTaken":    testProvisionNameTaken,
		"ProvisionConcurrently": testProvisionConcurrently,
		"DeletedSubjectIsNew":   testDeletedSubjectIsNew,
	}
	for name, open := range map[string]opener{"sqlite": openTestStore, "postgres": openPostgres, "sqlserver": openSQLServer} {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL external users tests"))
			}
			if name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			for tn, test := range suite {
				t.Run(tn, func(t *testing.T) {
					if name != "sqlserver" { // SQL Server's tests share one database
						t.Parallel()
					}
					test(t, open(t))
				})
			}
		})
	}
}

func testProvisionOnce(t *testing.T, s *Store) {
	ctx := context.Background()
	if _, err := s.UserByExternalID(ctx, "sub-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lookup of an unknown subject: %v, want ErrNotFound", err)
	}
	u, err := s.ProvisionUser(ctx, "sub-1", "alice")
	if err != nil || u.Name != "alice" || u.ID == 0 || !ValidStamp(u.SecurityStamp) {
		t.Fatalf("provision: %+v, %v", u, err)
	}
	again, err := s.ProvisionUser(ctx, "sub-1", "another-name")
	if err != nil || again != u {
		t.Errorf("provisioning the subject again: %+v, %v; want its account %+v", again, err, u)
	}
	found, err := s.UserByExternalID(ctx, "sub-1")
	if err != nil || found != u {
		t.Errorf("lookup: %+v, %v; want %+v", found, err, u)
	}
	// Subjects are compared exactly.
	if _, err := s.UserByExternalID(ctx, "SUB-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lookup by another case: %v, want ErrNotFound", err)
	}
}

func testProvisionNameTaken(t *testing.T, s *Store) {
	ctx := context.Background()
	if _, err := s.CreateUser(ctx, "Alice"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 40)
	if _, err := s.CreateUser(ctx, long[:32]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ subject, claim, want string }{
		{"s1", "alice", "alice2"},
		{"s2", "alice", "alice3"},
		{"s3", "josé@example.com", "jos__example.com"},
		{"s4", long, long[:31] + "2"},
		{"s5", "", "user"},
	} {
		u, err := s.ProvisionUser(ctx, tc.subject, tc.claim)
		if err != nil || u.Name != tc.want || !ValidName(u.Name) {
			t.Errorf("provision %q named %q: %+v, %v; want the name %q", tc.subject, tc.claim, u, err, tc.want)
		}
	}
}

// Replicas signing in one new subject at once make one account.
func testProvisionConcurrently(t *testing.T, s *Store) {
	const n = 8
	users := make([]User, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { users[i], errs[i] = s.ProvisionUser(context.Background(), "racer", "racer") })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || users[i] != users[0] {
			t.Errorf("provisioning %d of %d: %+v, %v; want %+v", i+1, n, users[i], errs[i], users[0])
		}
	}
	if c, err := s.CountUsers(context.Background()); err != nil || c != 1 {
		t.Errorf("%d users, %v; want 1", c, err)
	}
}

// A deleted account's subject gets a new account, never the old one.
func testDeletedSubjectIsNew(t *testing.T, s *Store) {
	ctx := context.Background()
	old, err := s.ProvisionUser(ctx, "sub-gone", "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByExternalID(ctx, "sub-gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lookup after delete: %v, want ErrNotFound", err)
	}
	u, err := s.ProvisionUser(ctx, "sub-gone", "gone")
	if err != nil || u.ID == old.ID || u.SecurityStamp == old.SecurityStamp {
		t.Errorf("provision after delete: %+v, %v; want an account other than %+v", u, err, old)
	}
}
