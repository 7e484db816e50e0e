package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"follows/db"
	"follows/graphcsv"
)

// runExport writes a graph as the CSV files import reads, so that a graph
// can move between SQLite and SQL Server:
//
//	follows export -db PATH -users users.csv -follows follows.csv
//
// Beside users.csv goes its sequence file, the highest user id ever given
// out, so that the import gives no deleted user's id again.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows export", stderr, getenv)
	usersPath := fs.String("users", "", "where to write users.csv (Id,Name,SecurityStamp)")
	followsPath := fs.String("follows", "", "where to write follows.csv (FollowerId,FolloweeId,CreatedAt)")
	seqPath := fs.String("sequence", "", "where to write the highest user id ever given out (LastUserId); default beside -users, users.sequence.csv for users.csv")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *usersPath == "" || *followsPath == "" {
		return errors.New("export: give -users and -follows")
	}
	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	// write makes the file at path with fn, saying what it was writing when
	// that fails.
	write := func(path, what string, fn func(w io.Writer) (int, error)) (int, error) {
		f, err := os.Create(path)
		if err != nil {
			return 0, fmt.Errorf("export: %w", err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		n, err := fn(w)
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, fmt.Errorf("export %s: %w", what, err)
		}
		return n, nil
	}
	users, err := write(*usersPath, "users", func(w io.Writer) (int, error) { return graphcsv.WriteUsers(w, store.ExportUsers(ctx)) })
	if err != nil {
		return err
	}
	follows, err := write(*followsPath, "follows", func(w io.Writer) (int, error) { return graphcsv.WriteFollows(w, store.ExportFollows(ctx)) })
	if err != nil {
		return err
	}
	// Read after the users, so that it is at least the highest exported.
	last, err := store.LastUserID(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if *seqPath == "" {
		*seqPath = graphcsv.SequencePath(*usersPath)
	}
	if _, err := write(*seqPath, "the user id sequence", func(w io.Writer) (int, error) { return 1, graphcsv.WriteSequence(w, last) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "exported %d users and %d follows\n", users, follows)
	return nil
}
