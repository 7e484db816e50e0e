//go:build unix

package main

import (
	"bufio"
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"follows/db/pgtest"
)

// An import killed while loading a new SQLite file leaves a file that
// holds part of a graph (its users, say, and none of its follows). Every
// command that opens it refuses it, with the same words, saying to run
// the import again: the server, migrate (its dry run too), check-counts,
// import into it, and, what a user would otherwise trust, export and
// copy -from, which would report success with the follows lost. They
// exit non-zero, write nothing (no export folder, no copy), and leave the
// file as it was.
func TestEveryCommandRefusesAKilledImport(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	killed := filepath.Join(dir, "killed.db")
	killImportMidway(t, bin, killed)
	listing := func() string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return strings.Join(names, " ")
	}
	sum := func() [16]byte {
		b, err := os.ReadFile(killed)
		if err != nil {
			t.Fatal(err)
		}
		return md5.Sum(b)
	}
	before, files := sum(), listing()

	const want = "an import into this file did not finish (the process ended while loading), so it may hold part of a graph and nothing reads it, export and copy included: delete the file and run the import again"
	exported, copied := filepath.Join(dir, "graph"), filepath.Join(dir, "copy.db")
	again := t.TempDir()
	os.WriteFile(filepath.Join(again, "users.csv"), []byte("Id,Name\n1,zed\n"), 0o600)
	os.WriteFile(filepath.Join(again, "follows.csv"), []byte("FollowerId,FolloweeId,CreatedAt\n"), 0o600)
	for name, args := range map[string][]string{
		"export":           {"export", "-db", killed, "-dir", exported},
		"copy -from":       {"copy", "-from", killed, "-to", copied},
		"migrate -dry-run": {"migrate", "-dry-run", "-db", killed},
		"migrate":          {"migrate", "-db", killed},
		"check-counts":     {"check-counts", "-db", killed},
		"import into it":   {"import", "-db", killed, "-users", filepath.Join(again, "users.csv"), "-follows", filepath.Join(again, "follows.csv")},
		"the server":       {"-addr", "127.0.0.1:0", "-db", killed, "-secret", testSecret},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut {
			t.Errorf("%s of a file whose import was killed: %v, want a non-zero exit\n%s", name, err, out)
			continue
		}
		if !strings.Contains(string(out), want) || strings.Contains(string(out), "export what can be read") || strings.Contains(string(out), "nothing to adopt") {
			t.Errorf("%s of a file whose import was killed said:\n%s\nwant: %s", name, out, want)
		}
	}
	for _, path := range []string{exported, copied} {
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%s was written from a file whose import was killed (%v)", path, err)
		}
	}
	if now := listing(); now != files {
		t.Errorf("the refusals left the folder holding %s; before them: %s", now, files)
	}
	if sum() != before {
		t.Error("a command that refused the file changed it")
	}
}

// killImportMidway starts `import` into a new SQLite file at path and
// kills it (SIGKILL, as an out-of-memory killer or a power cut would)
// while it loads the follows. The follows come through a named pipe, so
// that the import is surely midway when it dies: it has said how many
// follows it has loaded, and the rest have not been written yet.
// It returns the import's folder.
func killImportMidway(t *testing.T, bin, dsn string) (src string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), "graph")
	if err := os.Mkdir(src, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("Id,Name,SecurityStamp,DeactivatedAt,ExternalId\n")
	for i := 1; i <= killedUsers; i++ {
		fmt.Fprintf(&b, "%d,u%d,%s,,\n", i, i, strings.Repeat("ab", 16))
	}
	files := map[string]string{
		"users.csv":    b.String(),
		"blocks.csv":   "BlockerId,BlockedId,CreatedAt\n",
		"manifest.csv": fmt.Sprintf("Version,LastUserId,Users,Blocks,Follows\n2,%d,%d,0,%d\n", killedUsers, killedUsers, len(killedFollows())),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(src, "follows.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}

	cmd := exec.Command(bin, "import", "-db", dsn, "-dir", src)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	// The first killedSent follows, then nothing until the test ends: the
	// import has loaded some (it says so at 50,000) and waits for the
	// rest when it is killed.
	done := make(chan struct{})
	defer close(done)
	// Should the import die before it opens the pipe, the writer's
	// open would wait for ever: a reader of our own releases it.
	defer func() {
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
	}()
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		w.WriteString("FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n")
		for _, row := range killedFollows()[:killedSent] {
			w.WriteString(row)
		}
		if w.Flush() == nil {
			<-done
		}
	}()
	loaded := regexp.MustCompile(`^[1-9][0-9]* follows, [0-9]+ rows/s`)
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var log []string
		for sc.Scan() {
			log = append(log, sc.Text())
			if loaded.MatchString(sc.Text()) {
				said <- ""
				return
			}
		}
		said <- strings.Join(log, "\n")
	}()
	select {
	case log := <-said:
		if log != "" {
			t.Fatalf("the import ended before it loaded any follows:\n%s", log)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the import loaded no follows within 60s")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return src
}

// killedUsers are the users of the graph killImportMidway imports, each
// following every other: killedFollows are its follows, a CSV line each,
// of which the import is given killedSent before it is killed.
const killedUsers, killedSent = 270, 60_000

func killedFollows() []string {
	rows := make([]string, 0, killedUsers*(killedUsers-1))
	for a := 1; a <= killedUsers; a++ {
		for k := 1; k < killedUsers; k++ {
			rows = append(rows, fmt.Sprintf("%d,%d,2026-01-01 00:00:00.0000000,0,1\n", a, (a+k-1)%killedUsers+1))
		}
	}
	return rows
}

// On PostgreSQL an import is one transaction, the follow table's
// set-aside indexes and triggers included, so an import killed midway
// leaves no mark because it leaves nothing: export reads the database as
// it was before (here, empty), and the same import run again loads the
// whole graph.
func TestAKilledImportLeavesPostgreSQLAsItWas(t *testing.T) {
	bin := binary(t)
	dsn := pgtest.DSN(t, "the PostgreSQL run of the killed import")
	src := killImportMidway(t, bin, dsn)

	export := func() string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "graph")
		if msg, err := exec.Command(bin, "export", "-db", dsn, "-dir", out).CombinedOutput(); err != nil {
			t.Fatalf("export after the killed import: %v\n%s", err, msg)
		}
		b, err := os.ReadFile(filepath.Join(out, "manifest.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// The identity sequence is no part of a transaction: a killed
	// import may leave it moved on, which only skips ids.
	if got := export(); !regexp.MustCompile(`^Version,LastUserId,Users,Blocks,Follows\n2,[0-9]+,0,0,0\n$`).MatchString(got) {
		t.Errorf("the export after a killed import has the manifest\n%s\nwant the empty graph the database held before", got)
	}
	// The follows, whole this time, from a file rather than the pipe.
	whole := filepath.Join(src, "follows.csv")
	os.Remove(whole)
	var b strings.Builder
	b.WriteString("FollowerId,FolloweeId,CreatedAt,Muted,NotificationsEnabled\n")
	for _, row := range killedFollows() {
		b.WriteString(row)
	}
	if err := os.WriteFile(whole, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(bin, "import", "-db", dsn, "-dir", src).CombinedOutput(); err != nil {
		t.Fatalf("the import run again: %v\n%s", err, msg)
	}
	if got, want := export(), fmt.Sprintf("Version,LastUserId,Users,Blocks,Follows\n2,%d,%d,0,%d\n", killedUsers, killedUsers, len(killedFollows())); got != want {
		t.Errorf("the export after the import run again has the manifest\n%s\nwant\n%s", got, want)
	}
}
