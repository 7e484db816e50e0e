package main

import (
	"context"
	"fmt"
	"io"

	"follows/db"
)

// runMigrate adopts an EF Core database if it is one and applies the
// migrations; with -dry-run it runs the same in one transaction and rolls
// it back, so that it says what the real run would do, errors included.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, fs := newFlags("follows migrate", stderr, getenv)
	dryRun := fs.Bool("dry-run", false, "run the adoption and the migrations in a transaction, print what they did, and roll it back")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dryRun {
		plan, err := db.PlanAdoption(ctx, c.dsn)
		fmt.Fprint(stdout, plan)
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
