// Package move moves a graph between databases (docs/moving-a-graph.md):
// into one from the folder export writes or the CSV files of version 1
// (Import), out of one into such a folder (Export), or straight from one
// into another (Copy), saying what it did and, as the follows go in, how
// far it has got.
package move

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"follows/db"
	"follows/graphcsv"
)

// Source is where Import reads a graph: Dir, a folder export wrote; or
// Users and Follows, the CSV files of version 1 (earlier exports,
// hand-made files), with Sequence, the file of the last user id given
// out, which is read from beside Users (graphcsv.SequencePath) when
// empty and there.
type Source struct {
	Dir                      string
	Users, Follows, Sequence string
}

// Import loads the graph of src into the database dsn names, all or
// nothing: new users then get ids above every id the exported database
// gave.
func Import(ctx context.Context, dsn string, src Source, stdout, stderr io.Writer) error {
	g, closeFiles, err := src.open()
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer closeFiles()
	store, err := db.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	return load(ctx, store, g, stdout, stderr, "imported")
}

// open opens the files of src as a graph; closeFiles closes them.
func (src Source) open() (g db.Graph, closeFiles func() error, err error) {
	if src.Dir != "" {
		return graphcsv.ReadDir(src.Dir)
	}
	last, err := readSequence(src.Sequence, src.Users)
	if err != nil {
		return db.Graph{}, nil, err
	}
	uf, err := os.Open(src.Users)
	if err != nil {
		return db.Graph{}, nil, err
	}
	ff, err := os.Open(src.Follows)
	if err != nil {
		uf.Close()
		return db.Graph{}, nil, err
	}
	g = db.Graph{Users: graphcsv.ReadUsers(src.Users, uf), Follows: graphcsv.ReadFollows(src.Follows, ff), LastUserID: last}
	return g, func() error { return errors.Join(uf.Close(), ff.Close()) }, nil
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

// Export writes the graph of the database dsn names as a folder that
// Import reads: graphcsv's version 2, every user with its stamp and
// deactivation, every block, every follow with its settings, and the
// highest user id ever given out. The database is opened read-only, and
// neither adopted nor migrated (see db.OpenGraph). dir must be new or an
// empty folder, and appears only once whole (see graphcsv.WriteDir).
func Export(ctx context.Context, dsn, dir string, stdout io.Writer) error {
	g, err := db.OpenGraph(ctx, dsn)
	if err != nil {
		return err
	}
	defer g.Close()
	if g.Shape != db.ShapeOurs {
		fmt.Fprintf(stdout, "database shape: %s, read as it is, not adopted%s\n", g.Shape, map[bool]string{true: " (UserUser has no times: its follows are dated now)"}[g.Shape == db.ShapeConvention])
	}
	m, err := graphcsv.WriteDir(dir, g.Graph(ctx))
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %d users, %d blocks and %d follows (format version %d, last user id %d)\n", m.Users, m.Blocks, m.Follows, m.Version, m.LastUserID)
	return nil
}

// Copy moves a graph from one database straight into another, by the
// path Export and Import take but without files between them. The source
// is read as Export reads it (read-only, neither adopted nor migrated, in
// one transaction); the destination is opened as the server opens it
// (migrated) and loaded as Import loads it, all or nothing.
func Copy(ctx context.Context, from, to string, stdout, stderr io.Writer) error {
	if from == to {
		return errors.New("copy: -from and -to name the same database")
	}
	src, err := db.OpenGraph(ctx, from)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer src.Close()
	dst, err := db.Open(ctx, to)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer dst.Close()
	fmt.Fprintf(stderr, "copying a graph (database shape: %s, last user id %d)\n", src.Shape, src.LastUserID)
	return load(ctx, dst, src.Graph(ctx), stdout, stderr, "copied")
}
