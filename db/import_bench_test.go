//go:build unix

package db_test

import (
	"context"
	"io"
	"iter"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"follows/db"
	"follows/graphcsv"
)

// BenchmarkImport imports the graph in FOLLOWS_BENCH_CSV (a folder with
// users.csv and follows.csv, as `go run ./bench gen` writes them) into a
// new SQLite file, and logs where the time went: parsing the CSV (read
// into memory first, so that it is timed apart) and each of the import's
// phases. Run it with -benchtime=1x: one import is several seconds.
func BenchmarkImport(b *testing.B) {
	dir := os.Getenv("FOLLOWS_BENCH_CSV")
	if dir == "" {
		b.Skip("set FOLLOWS_BENCH_CSV to a folder with users.csv and follows.csv (see docs/benchmarks.md)")
	}
	ctx := context.Background()
	start := time.Now()
	users := readAllRows(b, filepath.Join(dir, "users.csv"), graphcsv.ReadUsers)
	follows := readAllRows(b, filepath.Join(dir, "follows.csv"), graphcsv.ReadFollows)
	b.Logf("parse CSV %d users, %d follows: %v", len(users), len(follows), time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "import.db")
		s, err := db.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, cpu := time.Now(), processCPU()
		st, err := s.Import(ctx, rowsOf(users), rowsOf(follows), 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		took, cpu := time.Since(start), processCPU()-cpu
		for _, p := range st.Phases {
			b.Logf("%-22s %v", p.Name, p.Took.Round(time.Millisecond))
		}
		b.Logf("import and close: %v (CPU %v), %.0f follows/s", took.Round(time.Millisecond), cpu.Round(time.Millisecond), float64(st.Follows)/took.Seconds())
		b.ReportMetric(float64(st.Follows)/took.Seconds(), "follows/s")
	}
}

func readAllRows[T any](b *testing.B, path string, read func(string, io.Reader) iter.Seq2[T, error]) []T {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var rows []T
	for r, err := range read(path, f) {
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

func rowsOf[T any](rows []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// processCPU is the CPU time the process has used, user and system: on a
// shared machine, a steadier measure than the wall clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
