package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"follows/db/adopt"
)

// Adopting an existing EF Core database is package adopt's: the store
// gives it a transaction, the dialect's migrations and the dialect's
// adoption, and says what it did as Open and PlanAdoption.

// Plan says what adoption finds and does (see adopt.Plan).
type Plan = adopt.Plan

// AdoptionError is an adoption refused (see adopt.Error).
type AdoptionError = adopt.Error

// Adoption shapes (see package adopt).
const (
	ShapeNew        = adopt.ShapeNew
	ShapeOurs       = adopt.ShapeOurs
	ShapeConvention = adopt.ShapeConvention
	ShapeJoinEntity = adopt.ShapeJoinEntity
)

// PlanAdoption is a dry run: it adopts the database named by dsn and runs
// the migrations not yet applied, all in one transaction, and rolls it
// back. So its plan and its error are the real run's. A new database (a
// SQLite file that does not exist yet or is empty) is only named new.
func PlanAdoption(ctx context.Context, dsn string) (Plan, error) {
	d, connStr, err := dialectFor(dsn)
	if err != nil {
		return Plan{}, err
	}
	if err := refuseUnfinished(ctx, d, dsn); err != nil {
		return Plan{}, fmt.Errorf("%s: %w", location(d, dsn), err)
	}
	plan, err := adoptAndMigrate(ctx, d, dsn, connStr, false)
	if err != nil {
		// Said as Open says it.
		return plan, fmt.Errorf("%s: %w", location(d, dsn), d.classify(err))
	}
	return plan, nil
}

// adoptAndMigrate adopts an EF Core database and runs the migrations after
// it in one transaction, committed if commit is set and rolled back
// otherwise, and returns what it did. It runs on a connection of its own,
// before the server's settings touch the database: on SQLite not even WAL
// (which would rewrite the file's header), and without foreign key
// enforcement, which rebuilding a table needs off (the keys are checked
// whole before the commit). On this server's own database it does nothing
// when commit is set: goose applies what is pending.
func adoptAndMigrate(ctx context.Context, d dialect, dsn, connStr string, commit bool) (Plan, error) {
	if f, ok := d.(fileDatabase); ok {
		if fi, err := os.Stat(f.filePath(dsn)); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
			return Plan{Shape: ShapeNew}, nil
		}
		connStr = f.adoptionConn(dsn)
	}
	fsys, err := fs.Sub(migrations, "migrations/"+d.name())
	if err != nil {
		return Plan{}, fmt.Errorf("migrations for %s: %w", d.name(), err)
	}
	sqlDB, err := sql.Open(d.driver(), connStr)
	if err != nil {
		return Plan{}, err
	}
	defer sqlDB.Close()
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return Plan{}, err
	}
	defer tx.Rollback()
	plan, err := adopt.Run(ctx, adoptionTx{tx, d}, fsys, adoptionOf(d), !commit)
	if err != nil || !commit {
		return plan, err
	}
	if err := tx.Commit(); err != nil {
		return plan, fmt.Errorf("adopt: commit: %w", err)
	}
	return plan, nil
}

// adoptionTx is a transaction as adoption takes it: statements it writes
// once for every dialect are rebound as the store's are.
type adoptionTx struct {
	*sql.Tx
	d dialect
}

func (t adoptionTx) Rebind(q string) string   { return t.d.rebind(q) }
func (t adoptionTx) TimeArg(tm time.Time) any { return t.d.timeArg(tm) }
