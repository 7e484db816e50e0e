package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// An existing EF Core database for the follower model comes in one of two
// shapes, and the server adopts either before its own migrations run:
//
//   - "convention": EF's implicit many-to-many join table
//     UserUser(FollowersId, FollowingId), where FollowersId is the follower
//     and FollowingId the one followed, with no time. It is converted in
//     place, in one transaction: Follows is created and filled (FollowerId =
//     FollowersId, FolloweeId = FollowingId, never inverted; CreatedAt the
//     conversion time), the row counts are compared, and only then is
//     UserUser dropped.
//   - "join-entity": Follows(FollowerId, FolloweeId, CreatedAt) as the server
//     itself has it. It is adopted as it is, adding only what is missing.
//
// Either way the database is then recorded as at migration 1, and the
// usual migrations add counters, blocks and the rest. EF's own tables
// (__EFMigrationsHistory) are left alone, so the EF Core app can keep
// running beside the server. A table that holds follows is never dropped
// and recreated.
//
// The same holds on SQLite and on PostgreSQL (a database EF Core's Npgsql
// provider made, with the same names quoted); what differs, reading the
// catalogue, is the dialect's adoption. The statements here quote EF's
// names that are not the server's (UserUser...), which PostgreSQL would
// otherwise fold to lower case.

// Adoption shapes.
const (
	ShapeNew        = "new"         // no tables yet: the migrations create them
	ShapeOurs       = "follows"     // already this server's database
	ShapeConvention = "convention"  // EF Core's UserUser join table
	ShapeJoinEntity = "join-entity" // EF Core's explicit Follows entity
)

// Plan says what adoption finds and would do.
type Plan struct {
	Shape string
	Steps []string
}

func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "database shape: %s\n", p.Shape)
	if len(p.Steps) == 0 {
		b.WriteString("nothing to adopt\n")
	}
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}

// AdoptionError is a conversion refused for rows that would break the
// server's constraints. The database is left as it was.
type AdoptionError struct {
	Problems []string
}

func (e *AdoptionError) Error() string {
	return "cannot adopt the database, nothing was changed:\n  " + strings.Join(e.Problems, "\n  ")
}

// PlanAdoption inspects the database named by dsn and says what adopting
// it would do, changing nothing: a SQLite file is opened read-only and
// with none of the server's settings (not even WAL, which would rewrite
// its header).
func PlanAdoption(ctx context.Context, dsn string) (Plan, error) {
	d, connStr, err := dialectFor(dsn)
	if err != nil {
		return Plan{}, err
	}
	if d.name == "sqlite" {
		path := sqlitePath(dsn)
		if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
			return Plan{Shape: ShapeNew}, nil
		}
		connStr = "file:" + path + "?mode=ro&_pragma=busy_timeout(10000)"
	}
	sqlDB, err := sql.Open(d.driver, connStr)
	if err != nil {
		return Plan{}, err
	}
	defer sqlDB.Close()
	s := &Store{db: sqlDB, d: d}
	var plan Plan
	err = s.inTx(ctx, func(r runner) error {
		var err error
		plan, err = s.adopt(ctx, r, false)
		return err
	})
	return plan, err
}

// adoptExisting runs before the migrations: it converts or adopts an EF
// Core database, in one transaction, and returns what it did.
func (s *Store) adoptExisting(ctx context.Context) (Plan, error) {
	var plan Plan
	err := s.inTx(ctx, func(r runner) error {
		var err error
		plan, err = s.adopt(ctx, r, true)
		return err
	})
	return plan, err
}

// adoption is how a dialect's catalogue is read and written for
// adopting an EF Core database.
type adoption struct {
	// tables selects the names of the tables there are.
	tables string
	// exists counts the tables and indexes named ?.
	exists string
	// lock, if not "", is run first in a transaction that adopts, so
	// that instances started together adopt one after another (the
	// later ones then find the database adopted). SQLite's write
	// transaction does that already.
	lock string
	// joinEntity are the steps, beyond migration 1's missing objects,
	// that an adopted Follows table needs for the server's writes;
	// laterSteps says what the later migrations do to it beyond adding
	// counts, blocks and settings, for the plan.
	joinEntity []adoptStep
	laterSteps string
}

// adoptStep is a statement an adoption runs and what its plan says of it.
type adoptStep struct{ says, stmt string }

func (s *Store) adopt(ctx context.Context, r runner, apply bool) (Plan, error) {
	a := s.d.adoption
	if a == nil {
		// SQL Server: the server creates its own tables.
		return Plan{Shape: ShapeNew}, nil
	}
	if apply && a.lock != "" {
		if _, err := r.exec(ctx, a.lock); err != nil {
			return Plan{}, fmt.Errorf("adopt: wait for other instances: %w", err)
		}
	}
	tables, err := catalogueTables(ctx, r, a.tables)
	if err != nil {
		return Plan{}, err
	}
	switch {
	case tables[goose.DefaultTablename]:
		return Plan{Shape: ShapeOurs}, nil
	case !tables["Users"]:
		return Plan{Shape: ShapeNew}, nil
	case tables["UserUser"] && !tables["Follows"]:
		return s.convertUserUser(ctx, r, apply)
	case tables["Follows"]:
		return s.adoptFollows(ctx, r, apply)
	}
	return Plan{}, errors.New("adopt: a Users table without follows (neither UserUser nor Follows): not a database of this model")
}

// catalogueTables runs a dialect's query for the names of the tables.
func catalogueTables(ctx context.Context, r runner, query string) (map[string]bool, error) {
	rows, err := r.query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tables := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		tables[name] = true
	}
	return tables, rows.Err()
}

// refuseBadRows runs the checks of a shape's rows, and usersChecks, each a
// query listing offending rows, and refuses adoption when any row is.
func refuseBadRows(ctx context.Context, r runner, checks map[string]string) error {
	for k, v := range usersChecks {
		checks[k] = v
	}
	bad, err := problems(ctx, r, checks)
	if err != nil {
		return fmt.Errorf("adopt: check rows: %w", err)
	}
	if len(bad) > 0 {
		return &AdoptionError{Problems: bad}
	}
	return nil
}

// problems runs checks that each list offending rows, one per row.
func problems(ctx context.Context, r runner, checks map[string]string) ([]string, error) {
	var out []string
	for what, q := range checks {
		rows, err := r.query(ctx, q)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, what+": "+row)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// usersChecks are the Users rows the server's constraints would refuse.
// Names are ASCII, so lower() compares them as SQLite's NOCASE does.
var usersChecks = map[string]string{
	"two users share a name (names are unique without regard to case)": `SELECT string_agg(Id || ' ' || Name, ', ' ORDER BY Id) FROM Users GROUP BY lower(Name) HAVING COUNT(*) > 1`,
	"a user without a name": `SELECT CAST(Id AS TEXT) FROM Users WHERE Name IS NULL OR Name = ''`,
}

func (s *Store) convertUserUser(ctx context.Context, r runner, apply bool) (Plan, error) {
	var rowCount int
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM "UserUser"`, nil, &rowCount); err != nil {
		return Plan{}, fmt.Errorf("adopt: read UserUser: %w", err)
	}
	plan := Plan{Shape: ShapeConvention, Steps: []string{
		"check UserUser and Users for rows the Follows constraints would refuse",
		"create Follows with its keys, CK_Follows_NoSelfFollow, foreign keys and keyset indexes",
		fmt.Sprintf("copy %d rows: FollowerId = FollowersId (the follower), FolloweeId = FollowingId (the one followed), CreatedAt = now", rowCount),
		"check that Follows holds as many rows as UserUser, then drop UserUser",
		"record the schema as at migration 1; later migrations add counts, blocks and settings",
	}}
	const pair = `"FollowersId" || ' -> ' || "FollowingId"`
	checks := map[string]string{
		"a user following itself (UserUser row)":            `SELECT ` + pair + ` FROM "UserUser" WHERE "FollowersId" = "FollowingId"`,
		"a follower that is not a user (UserUser row)":      `SELECT ` + pair + ` FROM "UserUser" WHERE "FollowersId" NOT IN (SELECT Id FROM Users)`,
		"a followed user that is not a user (UserUser row)": `SELECT ` + pair + ` FROM "UserUser" WHERE "FollowingId" NOT IN (SELECT Id FROM Users)`,
	}
	if err := refuseBadRows(ctx, r, checks); err != nil || !apply {
		return plan, err
	}
	if err := s.createFollowsSchema(ctx, r); err != nil {
		return Plan{}, err
	}
	if _, err := r.exec(ctx, `INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt)
SELECT "FollowersId", "FollowingId", ? FROM "UserUser"`, s.d.timeArg(time.Now())); err != nil {
		return Plan{}, fmt.Errorf("adopt: copy UserUser into Follows: %w", err)
	}
	var copied int
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM Follows`, nil, &copied); err != nil {
		return Plan{}, err
	}
	if copied != rowCount {
		return Plan{}, fmt.Errorf("adopt: Follows holds %d rows after copying %d from UserUser; nothing was changed", copied, rowCount)
	}
	if _, err := r.exec(ctx, `DROP TABLE "UserUser"`); err != nil {
		return Plan{}, fmt.Errorf("adopt: drop UserUser: %w", err)
	}
	return plan, markMigrated(ctx, r)
}

func (s *Store) adoptFollows(ctx context.Context, r runner, apply bool) (Plan, error) {
	plan := Plan{Shape: ShapeJoinEntity, Steps: []string{
		"keep Follows and its rows as they are",
		"add what is missing of IX_Users_Name and the two keyset indexes on Follows",
	}}
	for _, st := range s.d.adoption.joinEntity {
		plan.Steps = append(plan.Steps, st.says)
	}
	plan.Steps = append(plan.Steps, "record the schema as at migration 1; later migrations add counts, blocks and settings"+s.d.adoption.laterSteps)
	checks := map[string]string{
		"a user following itself (Follows row)": `SELECT FollowerId || ' -> ' || FolloweeId FROM Follows WHERE FollowerId = FolloweeId`,
		"a follow of or by a missing user (Follows row)": `SELECT FollowerId || ' -> ' || FolloweeId FROM Follows
WHERE FollowerId NOT IN (SELECT Id FROM Users) OR FolloweeId NOT IN (SELECT Id FROM Users)`,
	}
	if err := refuseBadRows(ctx, r, checks); err != nil || !apply {
		return plan, err
	}
	if err := s.createFollowsSchema(ctx, r); err != nil {
		return Plan{}, err
	}
	for _, st := range s.d.adoption.joinEntity {
		if _, err := r.exec(ctx, st.stmt); err != nil {
			return Plan{}, fmt.Errorf("adopt: %s: %w", st.says, err)
		}
	}
	return plan, markMigrated(ctx, r)
}

// createFollowsSchema runs migration 1's statements that are missing:
// everything but the Users table, which EF Core made, and objects that
// exist already under their name.
func (s *Store) createFollowsSchema(ctx context.Context, r runner) error {
	src, err := fs.ReadFile(migrations, "migrations/"+s.d.name+"/00001_users_and_follows.sql")
	if err != nil {
		return err
	}
	for _, stmt := range upStatements(string(src)) {
		name := createdName(stmt)
		if name == "Users" {
			continue
		}
		var n int
		if err := r.queryRow(ctx, s.d.adoption.exists, []any{name}, &n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := r.tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("adopt: %s: %w", name, err)
		}
	}
	return nil
}

// createdName is the quoted name a CREATE TABLE or CREATE INDEX statement
// creates.
func createdName(stmt string) string {
	for _, line := range strings.Split(stmt, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "CREATE") {
			parts := strings.Split(line, `"`)
			if len(parts) > 1 {
				return parts[1]
			}
		}
	}
	return ""
}

// markMigrated records, in goose's own table, that migration 1's schema is
// in place.
func markMigrated(ctx context.Context, r runner) error {
	st, err := database.NewStore(r.s.d.goose, goose.DefaultTablename)
	if err != nil {
		return err
	}
	if err := st.CreateVersionTable(ctx, r.tx); err != nil {
		return fmt.Errorf("adopt: create the migration table: %w", err)
	}
	for _, v := range []int64{0, 1} {
		if err := st.Insert(ctx, r.tx, database.InsertRequest{Version: v}); err != nil {
			return fmt.Errorf("adopt: record migration %d: %w", v, err)
		}
	}
	return nil
}
