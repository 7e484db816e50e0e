package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"follows/db"
	"follows/move"
)

// importer bulk-loads a graph, from a folder export wrote:
//
//	follows import -db DSN -dir DIR
//
// or from the CSV files of version 1 (earlier exports, hand-made files):
//
//	follows import -db DSN -users users.csv -follows follows.csv
type importer struct {
	database
	src move.Source
}

func (c *importer) flags(fs *flagSet) {
	c.database.flags(fs)
	fs.StringVar(&c.src.Dir, "dir", "", "folder export wrote (manifest.csv, users.csv, blocks.csv, follows.csv)")
	fs.StringVar(&c.src.Users, "users", "", "version 1: CSV of users with the header Id,Name,SecurityStamp (or Id,Name: new stamps)")
	fs.StringVar(&c.src.Follows, "follows", "", "version 1: CSV of follows with the header FollowerId,FolloweeId,CreatedAt (UTC, YYYY-MM-DD HH:MM:SS[.ffffff])")
	fs.StringVar(&c.src.Sequence, "sequence", "", "version 1: CSV with the header LastUserId: no new user gets an id at or below it; default beside -users (users.sequence.csv for users.csv), read when there")
}

func (c *importer) run(ctx context.Context, stdout, stderr io.Writer) error {
	switch {
	case c.src.Dir != "" && (c.src.Users != "" || c.src.Follows != ""):
		return errors.New("import: give -dir, or -users and -follows, not both")
	case c.src.Dir == "" && (c.src.Users == "" || c.src.Follows == ""):
		return errors.New("import: give -dir, or -users and -follows")
	}
	return move.Import(ctx, c.dsn, c.src, stdout, stderr)
}

// exporter writes a graph as a folder that import reads, so that a graph
// can move between databases (docs/moving-a-graph.md):
//
//	follows export -db DSN -dir DIR
type exporter struct {
	database
	dir string
	// The files of version 1 only, which lose blocks, settings and
	// deactivations: refused with a pointer to -dir.
	legacy [3]string
}

func (c *exporter) flags(fs *flagSet) {
	c.database.flags(fs)
	fs.StringVar(&c.dir, "dir", "", "new folder to write the graph into (manifest.csv, users.csv, blocks.csv, follows.csv), made owner-only; one that exists must be empty")
	fs.StringVar(&c.legacy[0], "users", "", "no longer written: give -dir (import still reads version 1 files)")
	fs.StringVar(&c.legacy[1], "follows", "", "no longer written: give -dir")
	fs.StringVar(&c.legacy[2], "sequence", "", "no longer written: give -dir")
}

func (c *exporter) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.legacy != [3]string{} {
		return errors.New("export: -users and -follows wrote files without blocks, follow settings or deactivations; give -dir, a folder for all of them")
	}
	if c.dir == "" {
		return errors.New("export: give -dir")
	}
	return move.Export(ctx, c.dsn, c.dir, stdout)
}

// copier moves a graph from one database straight into another:
//
//	follows copy -from DSN -to DSN
//
// The follows loaded so far go to stderr as they go in.
type copier struct{ from, to string }

func (c *copier) flags(fs *flagSet) {
	fs.StringVar(&c.from, "from", "", "database to copy the graph from: a SQLite path or file: URI, sqlserver://…, or postgres://…; it is not changed")
	fs.StringVar(&c.to, "to", "", "database to copy the graph into, made or migrated if need be")
}

func (c *copier) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.from == "" || c.to == "" {
		return errors.New("copy: give -from and -to")
	}
	return move.Copy(ctx, c.from, c.to, stdout, stderr)
}

// migrator adopts an EF Core database if it is one and applies the
// migrations; with -dry-run it runs the same in one transaction and rolls
// it back, so that it says what the real run would do, errors included.
type migrator struct {
	database
	dryRun bool
}

func (c *migrator) flags(fs *flagSet) {
	c.database.flags(fs)
	fs.BoolVar(&c.dryRun, "dry-run", false, "run the adoption and the migrations in a transaction, print what they did, and roll it back")
}

func (c *migrator) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.dryRun {
		plan, err := db.PlanAdoption(ctx, c.dsn)
		if plan.Shape != "" {
			// Refused before it read the database's shape (an
			// unfinished import), there is no plan to show.
			fmt.Fprint(stdout, plan)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "then: apply the migrations not yet applied (dry run: rolled back, nothing was changed)")
		return nil
	}
	store, err := db.Open(ctx, c.dsn)
	if err != nil {
		return err
	}
	defer store.Close()
	fmt.Fprint(stdout, store.Adopted)
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
