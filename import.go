package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"

	"follows/db"
)

// runImport bulk-loads a graph from CSV files:
//
//	follows import -db PATH -users users.csv -follows follows.csv
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows import", stderr, getenv)
	usersPath := fs.String("users", "", "CSV of users with the header Id,Name")
	followsPath := fs.String("follows", "", "CSV of follows with the header FollowerId,FolloweeId,CreatedAt (UTC, YYYY-MM-DD HH:MM:SS[.ffffff])")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *usersPath == "" || *followsPath == "" {
		return errors.New("import: give -users and -follows")
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

	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()

	start := time.Now()
	report := progressReporter(stderr, start)
	stats, err := store.Import(ctx, *usersPath, readUsers(*usersPath, uf), *followsPath, inBackground(readFollows(*followsPath, ff)), report)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(stdout, "imported %d users and %d follows in %.1fs (%.0f follows/s)\n",
		stats.Users, stats.Follows, secs, float64(stats.Follows)/secs)
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

// csvRecord is a CSV record's fields and the line it starts on.
type csvRecord struct {
	line   int
	fields []string
}

// csvRows yields the records of a CSV file after checking its header, or
// the error of a record that is not right. A record that cannot be read
// at all ends the file.
func csvRows(name string, r io.Reader, header ...string) iter.Seq2[csvRecord, *db.RowError] {
	return func(yield func(csvRecord, *db.RowError) bool) {
		cr := csv.NewReader(r)
		cr.FieldsPerRecord = -1
		cr.ReuseRecord = true
		rec, err := cr.Read()
		if err != nil || !strings.EqualFold(strings.Join(trimAll(rec), ","), strings.Join(header, ",")) {
			yield(csvRecord{}, &db.RowError{File: name, Line: 1, Reason: "the header must be " + strings.Join(header, ",")})
			return
		}
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				return
			}
			line, _ := cr.FieldPos(0)
			if err != nil {
				yield(csvRecord{}, &db.RowError{File: name, Line: line, Reason: err.Error()})
				return
			}
			if len(rec) != len(header) {
				if !yield(csvRecord{}, &db.RowError{File: name, Line: line, Reason: fmt.Sprintf("%d fields, want %d", len(rec), len(header))}) {
					return
				}
				continue
			}
			if !yield(csvRecord{line, trimAll(rec)}, nil) {
				return
			}
		}
	}
}

func trimAll(rec []string) []string {
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec
}

// readUsers parses users.csv: Id,Name.
func readUsers(name string, r io.Reader) iter.Seq2[db.UserRow, error] {
	return func(yield func(db.UserRow, error) bool) {
		for rec, bad := range csvRows(name, r, "Id", "Name") {
			if bad != nil {
				if !yield(db.UserRow{}, bad) {
					return
				}
				continue
			}
			line, rec := rec.line, rec.fields
			id, err := strconv.ParseInt(rec[0], 10, 64)
			var reason string
			switch {
			case err != nil || id <= 0:
				reason = fmt.Sprintf("Id %q is not a positive whole number", rec[0])
			case !db.ValidName(rec[1]):
				reason = fmt.Sprintf("Name %q is not a handle (%s)", rec[1], db.NameRule)
			}
			if reason != "" {
				if !yield(db.UserRow{}, &db.RowError{File: name, Line: line, Reason: reason}) {
					return
				}
				continue
			}
			if !yield(db.UserRow{Line: line, ID: id, Name: rec[1]}, nil) {
				return
			}
		}
	}
}

// readFollows parses follows.csv: FollowerId,FolloweeId,CreatedAt.
func readFollows(name string, r io.Reader) iter.Seq2[db.FollowRow, error] {
	return func(yield func(db.FollowRow, error) bool) {
		for rec, bad := range csvRows(name, r, "FollowerId", "FolloweeId", "CreatedAt") {
			if bad != nil {
				if !yield(db.FollowRow{}, bad) {
					return
				}
				continue
			}
			line, rec := rec.line, rec.fields
			follower, err1 := strconv.ParseInt(rec[0], 10, 64)
			followee, err2 := strconv.ParseInt(rec[1], 10, 64)
			at, err3 := time.Parse("2006-01-02 15:04:05.999999999", rec[2])
			var reason string
			switch {
			case err1 != nil || follower <= 0:
				reason = fmt.Sprintf("FollowerId %q is not a positive whole number", rec[0])
			case err2 != nil || followee <= 0:
				reason = fmt.Sprintf("FolloweeId %q is not a positive whole number", rec[1])
			case err3 != nil:
				reason = fmt.Sprintf("CreatedAt %q is not YYYY-MM-DD HH:MM:SS[.ffffff]", rec[2])
			}
			if reason != "" {
				if !yield(db.FollowRow{}, &db.RowError{File: name, Line: line, Reason: reason}) {
					return
				}
				continue
			}
			if !yield(db.FollowRow{Line: line, Follower: follower, Followee: followee, At: at}, nil) {
				return
			}
		}
	}
}

// inBackground runs a sequence in a goroutine of its own, a batch of items
// ahead of its consumer, so that parsing a file and loading it into the
// database use two cores.
func inBackground[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	type item struct {
		v   T
		err error
	}
	return func(yield func(T, error) bool) {
		batches := make(chan []item, 4)
		done := make(chan struct{})
		defer close(done)
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
		for batch := range batches {
			for _, it := range batch {
				if !yield(it.v, it.err) {
					return
				}
			}
		}
	}
}
