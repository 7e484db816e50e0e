package auth_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"follows/auth"
)

// Instances starting at once on one new database agree on its secret.
func TestKeepSecretConcurrently(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.db.secret")
	const n = 8
	secrets := make([]string, n)
	made := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { secrets[i], made[i], errs[i] = auth.KeepSecret(file) })
	}
	wg.Wait()
	makers := 0
	for i := range n {
		if errs[i] != nil || secrets[i] != secrets[0] || len(secrets[i]) < 32 {
			t.Errorf("instance %d: %q, %v; want the one secret of 32 bytes or more", i, secrets[i], errs[i])
		}
		if made[i] {
			makers++
		}
	}
	if makers != 1 {
		t.Errorf("%d instances made the secret; want 1", makers)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("left %d files; want the secret alone", len(entries))
	}
}

// A secret file's content is the secret but for its line end, CRLF
// included; other trailing space is the secret's own. An empty file, or
// one that is not there, is an error that says what was being read.
func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"from-file\n": "from-file",
		"crlf\r\n":    "crlf",
		"kept  ":      "kept  ",
		"\n":          "error: the token secret file",
		"":            "error: the token secret file",
	} {
		file := filepath.Join(dir, "secret")
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := auth.ReadSecret(file)
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("a file of %q: %q, want %q", content, got, want)
		}
	}
	if _, err := auth.ReadSecret(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "read the token secret file") {
		t.Errorf("a file that is not there: %v", err)
	}
}
