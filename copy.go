package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"follows/db"
)

// runCopy moves a graph from one database straight into another, by the
// path export and import take but without files between them:
//
//	follows copy -from DSN -to DSN
//
// The source is read as export reads it (read-only, neither adopted nor
// migrated, in one transaction); the destination is opened as the server
// opens it (migrated) and loaded as import loads it, all or nothing. The
// follows loaded so far go to stderr as they go in.
func runCopy(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("follows copy", stderr, getenv)
	from := fs.String("from", "", "database to copy the graph from: a SQLite path or file: URI, sqlserver://…, or postgres://…; it is not changed")
	to := fs.String("to", "", "database to copy the graph into, made or migrated if need be")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return errors.New("copy: give -from and -to")
	}
	if *from == *to {
		return errors.New("copy: -from and -to name the same database")
	}
	src, err := db.OpenGraph(ctx, *from)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer src.Close()
	dst, err := db.Open(ctx, *to)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer dst.Close()
	fmt.Fprintf(stderr, "copying a graph (database shape: %s, last user id %d)\n", src.Shape, src.LastUserID)
	return load(ctx, dst, src.Graph(ctx), stdout, stderr, "copied")
}
