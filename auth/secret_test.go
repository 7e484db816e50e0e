package auth_test

import (
	"os"
	"path/filepath"
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
