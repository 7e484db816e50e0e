package move

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"
	"time"

	"follows/db"
)

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
	fmt.Fprint(stderr, "phases:")
	for _, p := range stats.Phases {
		fmt.Fprintf(stderr, " %s %.2fs;", p.Name, p.Took.Seconds())
	}
	fmt.Fprintln(stderr)
	return nil
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
