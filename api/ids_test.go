package api_test

import (
	"context"
	"io"
	"iter"
	"math"
	"net/http"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db"
)

// noRows is an empty table for an import.
func noRows[T any]() iter.Seq2[T, error] { return func(func(T, error) bool) {} }

// readyz is what /readyz answers.
func readyz(t *testing.T, s *apitest.Server) (int, string) {
	t.Helper()
	resp, err := http.Get(s.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// signUpPastTheLastID signs up twice where the database has no ids left:
// each must answer IDS_EXHAUSTED, never STORAGE_FULL, and /readyz must
// stay 200, so that no client can take the server out of its load
// balancer by trying to sign up.
func signUpPastTheLastID(t *testing.T, s *apitest.Server) {
	t.Helper()
	for _, name := range []string{"past", "past_again"} {
		r := s.Do("", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } } }`, map[string]any{"n": name})
		if r.Code() != "IDS_EXHAUSTED" || !strings.Contains(r.Errors[0].Message, "every user id") {
			t.Errorf("sign-up with the ids used up: %+v; want IDS_EXHAUSTED", r.Errors)
		}
	}
	if code, body := readyz(t, s); code != http.StatusOK {
		t.Errorf("/readyz after refused sign-ups: %d %q; want 200", code, body)
	}
}

// A graph imported with its last id near the bound takes sign-ups up to
// it, and then refuses them as IDS_EXHAUSTED, the server staying ready.
func TestSignUpWithTheIDsUsedUp(t *testing.T) {
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		t.Parallel()
		s := d.Start(t)
		if _, err := s.Store.Import(context.Background(), noRows[db.UserRow](), noRows[db.FollowRow](), db.MaxUserID-1, nil); err != nil {
			t.Fatal(err)
		}
		last := s.CreateUser("last")
		if last.ID != "2147483647" {
			t.Fatalf("the last sign-up got id %s, want 2147483647", last.ID)
		}
		signUpPastTheLastID(t, s)
		// Other writes go on.
		if r := s.Do(last.Token, `mutation { deactivateAccount { user { id } } }`, nil); len(r.Errors) > 0 {
			t.Errorf("a write after refused sign-ups: %+v", r.Errors)
		}
	})
}

// A SQLite file whose sequence an earlier build's import set to 2^63-1,
// as the attack did, refuses sign-ups with the code of a full
// disk: the server tells the two apart.
func TestSignUpWithTheSQLiteSequenceAtItsEnd(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.CreateUser("alice")
	if _, err := apitest.OpenRaw(t, s.DBPath).Exec(`UPDATE sqlite_sequence SET seq = ? WHERE name = 'Users'`, int64(math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	signUpPastTheLastID(t, s)
}
