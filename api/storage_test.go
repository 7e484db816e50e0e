package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db"
)

// A full disk is reported, not hidden: writes answer STORAGE_FULL with a
// message that says so, and /readyz answers 503 with the reason until a
// write succeeds again. SQLite's max_page_count gives the same SQLITE_FULL
// as a full disk.
func TestStorageFullIsReported(t *testing.T) {
	t.Parallel()
	// A new database's size, to leave room for a few users only.
	scratch := filepath.Join(t.TempDir(), "scratch.db")
	st, err := db.Open(context.Background(), scratch)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var pages int
	apitest.OpenRaw(t, scratch).QueryRow(`PRAGMA page_count`).Scan(&pages)

	s := apitest.StartDSN(t, fmt.Sprintf("_pragma=max_page_count(%d)", pages+2))
	readyz := func() (int, string) {
		resp, err := http.Get(s.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != 200 {
		t.Fatalf("/readyz before any write: %d %s", code, body)
	}

	var made []apitest.Account
	var full apitest.Response
	for i := range 2000 {
		r := s.Do("", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`,
			map[string]any{"n": fmt.Sprintf("user%04d_%s", i, strings.Repeat("x", 20))})
		if len(r.Errors) > 0 {
			full = r
			break
		}
		var out struct {
			CreateUser struct {
				User  struct{ ID string }
				Token string
			}
		}
		if err := json.Unmarshal(r.Data, &out); err != nil {
			t.Fatal(err)
		}
		made = append(made, apitest.Account{ID: out.CreateUser.User.ID, Token: out.CreateUser.Token})
	}
	if len(made) == 0 || full.Errors == nil {
		t.Fatalf("%d sign-ups and no refusal", len(made))
	}
	if full.Code() != "STORAGE_FULL" || !strings.Contains(full.Errors[0].Message, "storage is full") {
		t.Errorf("a write into a full database: %+v, want STORAGE_FULL saying the storage is full", full.Errors)
	}
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "storage is full") {
		t.Errorf("/readyz while full: %d %q, want 503 saying the storage is full", code, body)
	}
	if !strings.Contains(s.Logs(), "storage is full") {
		t.Errorf("the log does not say the storage is full:\n%s", s.Logs())
	}

	// Deleting accounts frees pages; once a write succeeds the server is
	// ready again.
	for _, a := range made[:len(made)/2] {
		r := s.Do(a.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`, map[string]any{"id": a.ID})
		if len(r.Errors) > 0 {
			t.Fatalf("delete while full: %+v", r.Errors)
		}
	}
	if code, body := readyz(); code != 200 {
		t.Errorf("/readyz after a write succeeded: %d %q", code, body)
	}
	s.CreateUser("after")
}
