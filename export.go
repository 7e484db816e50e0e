package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"follows/db"
	"follows/graphcsv"
)

// runExport writes a graph as a folder that import reads, so that a graph
// can move between databases:
//
//	follows export -db DSN -dir DIR
//
// The folder is graphcsv's version 2 (docs/moving-a-graph.md): every
// user with its stamp and deactivation, every block, every follow with
// its settings, and the highest user id ever given out. The database is
// opened read-only, and neither adopted nor migrated (see db.OpenGraph).
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows export", stderr, getenv)
	dir := fs.String("dir", "", "folder to write the graph into (manifest.csv, users.csv, blocks.csv, follows.csv), made if need be")
	// The files of version 1 only, which lose blocks, settings and
	// deactivations: refused with a pointer to -dir.
	legacyUsers := fs.String("users", "", "no longer written: give -dir (import still reads version 1 files)")
	legacyFollows := fs.String("follows", "", "no longer written: give -dir")
	legacySequence := fs.String("sequence", "", "no longer written: give -dir")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *legacyUsers != "" || *legacyFollows != "" || *legacySequence != "" {
		return errors.New("export: -users and -follows wrote files without blocks, follow settings or deactivations; give -dir, a folder for all of them")
	}
	if *dir == "" {
		return errors.New("export: give -dir")
	}
	g, err := db.OpenGraph(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer g.Close()
	if g.Shape != db.ShapeOurs {
		fmt.Fprintf(stdout, "database shape: %s, read as it is, not adopted%s\n", g.Shape, map[bool]string{true: " (UserUser has no times: its follows are dated now)"}[g.Shape == db.ShapeConvention])
	}
	m, err := graphcsv.WriteDir(*dir, g.Graph(ctx))
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %d users, %d blocks and %d follows (format version %d, last user id %d)\n", m.Users, m.Blocks, m.Follows, m.Version, m.LastUserID)
	return nil
}
