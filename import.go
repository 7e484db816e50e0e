package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"
	"time"

	"follows/db"
	"follows/graphcsv"
)

// runImport bulk-loads a graph, from a folder export wrote:
//
//	follows import -db DSN -dir DIR
//
// or from the CSV files of version 1 (earlier exports, hand-made files):
//
//	follows import -db DSN -users users.csv -follows follows.csv
//
// The sequence file export wrote beside users.csv is read when it is
// there: new users then get ids above every id the exported database gave.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows import", stderr, getenv)
	dir := fs.String("dir", "", "folder export wrote (manifest.csv, users.csv, blocks.csv, follows.csv)")
	usersPath := fs.String("users", "", "version 1: CSV of users with the header Id,Name,SecurityStamp (or Id,Name: new stamps)")
	followsPath := fs.String("follows", "", "version 1: CSV of follows with the header FollowerId,FolloweeId,CreatedAt (UTC, YYYY-MM-DD HH:MM:SS[.ffffff])")
	seqPath := fs.String("sequence", "", "version 1: CSV with the header LastUserId: no new user gets an id at or below it; default beside -users (users.sequence.csv for users.csv), read when there")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var g db.Graph
	switch {
	case *dir != "" && (*usersPath != "" || *followsPath != ""):
		return errors.New("import: give -dir, or -users and -follows, not both")
	case *dir != "":
		var closeFiles func() error
		var err error
		if g, closeFiles, err = graphcsv.ReadDir(*dir); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer closeFiles()
	case *usersPath != "" && *followsPath != "":
		last, err := readSequence(*seqPath, *usersPath)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		uf, err := os.Open(*usersPath)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer uf.Close()
		ff, err := os.Open(*followsPath)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer ff.Close()
		g = db.Graph{Users: graphcsv.ReadUsers(*usersPath, uf), Follows: graphcsv.ReadFollows(*followsPath, ff), LastUserID: last}
	default:
		return errors.New("import: give -dir, or -users and -follows")
	}

	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	return load(ctx, store, g, stdout, stderr, "imported")
}

// load imports a graph into store, its follows read in the background,
// reporting progress and the import's phases to stderr and the outcome to
// stdout.
func load(ctx context.Context, store *db.Store, g db.Graph, stdout, stderr io.Writer, did string) error {
	start := time.Now()
	follows, stop := inBackground(g.Follows)
	defer stop()
	g.Follows = follows
	stats, err := store.ImportGraph(ctx, g, progressReporter(stderr, start))
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(stdout, "%s %d users, %d blocks and %d follows in %.1fs (%.0f follows/s; loading %.1fs, indexes and triggers %.1fs, recount %.1fs)\n",
		did, stats.Users, stats.Blocks, stats.Follows, secs, float64(stats.Follows)/secs, stats.Load.Seconds(), stats.Rebuild.Seconds(), stats.Recount.Seconds())
	if stats.FollowTable != "" {
		fmt.Fprintf(stderr, "follow table: %s\n", stats.FollowTable)
	}
	fmt.Fprint(stderr, "phases:")
	for _, p := range stats.Phases {
		fmt.Fprintf(stderr, " %s %.2fs;", p.Name, p.Took.Seconds())
	}
	fmt.Fprintln(stderr)
	return nil
}

// readSequence reads the sequence file at path, or, when path is empty,
// beside the users file if there is one there; without one the mark is 0.
func readSequence(path, usersPath string) (int64, error) {
	optional := path == ""
	if optional {
		path = graphcsv.SequencePath(usersPath)
	}
	f, err := os.Open(path)
	if optional && errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return graphcsv.ReadSequence(path, f)
}

// progressReporter prints the follows loaded so far and the rate: over one
// line that it rewrites on a terminal, as a line every few seconds
// elsewhere.
func progressReporter(w io.Writer, start time.Time) func(int) {
	f, ok := w.(*os.File)
	terminal := false
	if ok {
		if fi, err := f.Stat(); err == nil {
			terminal = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	var last time.Time
	return func(n int) {
		now := time.Now()
		if now.Sub(last) < 200*time.Millisecond || (!terminal && now.Sub(last) < 5*time.Second) {
			return
		}
		last = now
		rate := float64(n) / now.Sub(start).Seconds()
		if terminal {
			fmt.Fprintf(w, "\r%d follows, %.0f rows/s   ", n, rate)
		} else {
			fmt.Fprintf(w, "%d follows, %.0f rows/s\n", n, rate)
		}
	}
}

// inBackground reads a sequence in a goroutine of its own, started at
// once, up to backgroundBatches batches of items ahead of its consumer,
// so that parsing a file and loading it into the database use two cores,
// and the follows are read while the users go in. stop ends the reading
// when the sequence was not read to its end.
func inBackground[T any](seq iter.Seq2[T, error]) (_ iter.Seq2[T, error], stop func()) {
	type item struct {
		v   T
		err error
	}
	batches := make(chan []item, backgroundBatches)
	done := make(chan struct{})
	go func() {
		defer close(batches)
		batch := make([]item, 0, 1024)
		for v, err := range seq {
			batch = append(batch, item{v, err})
			if len(batch) == cap(batch) {
				select {
				case batches <- batch:
				case <-done:
					return
				}
				batch = make([]item, 0, 1024)
			}
		}
		select {
		case batches <- batch:
		case <-done:
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	return func(yield func(T, error) bool) {
		defer stop()
		for batch := range batches {
			for _, it := range batch {
				if !yield(it.v, it.err) {
					return
				}
			}
		}
	}, stop
}

// backgroundBatches is how far ahead inBackground reads, in batches of
// 1,024 items: for follows (about 100 bytes each), 25 MB, half a second
// of parsing, about what loading the harness's 100,000 users takes.
const backgroundBatches = 256
