package apitest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// verdict is what a check said about a database: whether it failed the
// test, and its messages.
type verdict struct {
	failed bool
	msgs   []string
}

// recorder is a testing.TB that keeps a check's failures instead of
// failing the test that runs the check, so that a test can assert that
// the check fails. Cleanups and everything else go to the real test.
type recorder struct {
	testing.TB
	mu sync.Mutex
	v  verdict
}

func (r *recorder) Helper() {}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.v.failed = true
	r.v.msgs = append(r.v.msgs, msg)
}

func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// check runs CheckGraph on the SQLite file at path and reports what it
// said, a Fatal included.
func check(t *testing.T, path string) verdict {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		CheckGraph(r, path)
	}()
	<-done
	return r.v
}

// CheckGraph passes a graph written over HTTP and fails one whose kept
// counts were changed behind the server's back.
func TestCheckGraphFindsDrift(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Sample()
	if v := check(t, s.DBPath); v.failed {
		t.Fatalf("CheckGraph fails the sample graph: %q", v.msgs)
	}
	if _, err := OpenRaw(t, s.DBPath).Exec(`UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Name" = 'dave'`); err != nil {
		t.Fatal(err)
	}
	v := check(t, s.DBPath)
	if !v.failed || !strings.Contains(strings.Join(v.msgs, "\n"), "1 users' counts differ") {
		t.Fatalf("CheckGraph after dave's count drifted: failed %v, %q", v.failed, v.msgs)
	}
}

// A file the recount cannot read (here one with no graph in it at all)
// fails the check: a drift query that errs must not read as no drift.
func TestCheckGraphFailsWhenItCannotRecount(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty.db")
	v := check(t, empty)
	if !v.failed {
		t.Fatal("CheckGraph passes a file with no Users or Follows table")
	}
	if msg := strings.Join(v.msgs, "\n"); !strings.Contains(msg, "no such table") {
		t.Errorf("CheckGraph's failure does not say what it could not read: %q", msg)
	}
}
