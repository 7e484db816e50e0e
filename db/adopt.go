package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
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
//     place: Follows is created and filled (FollowerId = FollowersId,
//     FolloweeId = FollowingId, never inverted; CreatedAt the conversion
//     time), the row counts are compared, and only then is UserUser
//     dropped.
//   - "join-entity": Follows(FollowerId, FolloweeId, CreatedAt) as the server
//     itself has it. It is adopted as it is, after its definition is read
//     from the catalogue and checked (adopt_verify.go): what is missing or
//     wrong and can be made right (the no-self-follow CHECK, the foreign
//     keys' delete actions, defaults) is, once the rows are known to obey
//     it; what cannot is refused, saying why.
//
// Either way the database is then recorded as at migration 1, and the
// later migrations run in the same transaction (migrateInTx), tolerating
// the columns and indexes an EF model may have added already. So adopting
// is one transaction: it commits whole, or fails and leaves the database
// exactly as it was. A dry run runs that same transaction and rolls it
// back, so it says what the real run does, errors included. EF's own
// tables (__EFMigrationsHistory) are left alone, so the EF Core app can
// keep running beside the server. A table that holds follows is never
// dropped before its rows are in another.
//
// The same holds on SQLite, PostgreSQL (a database EF Core's Npgsql
// provider made, with the same names quoted) and SQL Server; what differs,
// reading and changing the catalogue, is each dialect's adoption.

// Adoption shapes.
const (
	ShapeNew        = "new"         // no tables yet: the migrations create them
	ShapeOurs       = "follows"     // already this server's database
	ShapeConvention = "convention"  // EF Core's UserUser join table
	ShapeJoinEntity = "join-entity" // EF Core's explicit Follows entity
)

// Plan says what adoption finds and does.
type Plan struct {
	Shape string
	Steps []string
	// Migrations are the migrations run in the same transaction, after
	// the adoption (or, in a dry run, that would be).
	Migrations []string
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
	if len(p.Migrations) > 0 {
		fmt.Fprintf(&b, "migrations in the same transaction: %s\n", strings.Join(p.Migrations, ", "))
	}
	return b.String()
}

// AdoptionError is an adoption refused for rows that would break the
// server's constraints, or a definition the server cannot work with. The
// database is left as it was.
type AdoptionError struct {
	Problems []string
}

func (e *AdoptionError) Error() string {
	return "cannot adopt the database, nothing was changed:\n  " + strings.Join(e.Problems, "\n  ")
}

// PlanAdoption is a dry run: it adopts the database named by dsn and runs
// the migrations not yet applied, all in one transaction, and rolls it
// back. So its plan and its error are the real run's. A new database (a
// SQLite file that does not exist yet or is empty) is only named new.
func PlanAdoption(ctx context.Context, dsn string) (Plan, error) {
	d, connStr, err := dialectFor(dsn)
	if err != nil {
		return Plan{}, err
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
// enforcement, which rebuilding a table needs off (see
// sqliteRebuildFollows; the keys are checked whole before the commit).
// On this server's own database it does nothing when commit is set: goose
// applies what is pending.
func adoptAndMigrate(ctx context.Context, d dialect, dsn, connStr string, commit bool) (Plan, error) {
	if d.name() == "sqlite" {
		p := sqlitePath(dsn)
		if fi, err := os.Stat(p); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
			return Plan{Shape: ShapeNew}, nil
		}
		connStr = adoptionSQLiteDSN(dsn)
	}
	sqlDB, err := sql.Open(d.driver(), connStr)
	if err != nil {
		return Plan{}, err
	}
	defer sqlDB.Close()
	s := &Store{db: sqlDB, d: d}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return Plan{}, err
	}
	defer tx.Rollback()
	plan, err := s.adopt(ctx, runner{s: s, tx: tx}, !commit)
	if err != nil || !commit {
		return plan, err
	}
	if err := tx.Commit(); err != nil {
		return plan, fmt.Errorf("adopt: commit: %w", err)
	}
	return plan, nil
}

// adoptionSQLiteDSN opens a SQLite file for adopting it: its write lock
// taken when the transaction begins, so that instances started together
// adopt one after another, and foreign keys not enforced.
func adoptionSQLiteDSN(dsn string) string {
	params := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(0)"
	if _, q, _ := strings.Cut(dsn, "?"); strings.Contains(q, "mode=ro") {
		params += "&mode=ro"
	} else {
		params += "&_txlock=immediate"
	}
	return "file:" + sqlitePath(dsn) + "?" + params
}

// adoption is how a dialect's catalogue is read and written for
// adopting an EF Core database.
type adoption struct {
	// tables selects the names of the tables there are.
	tables string
	// exists counts the tables and indexes named ?.
	exists string
	// columnExists counts the columns of table ? named ?.
	columnExists string
	// lock, if not "", is run first in a transaction that adopts, so
	// that instances started together adopt one after another (the
	// later ones then find the database adopted). SQLite's write
	// transaction does that already.
	lock string
	// quote quotes a name the server's statements do not know (EF's
	// UserUser and its columns), which PostgreSQL would otherwise fold to
	// lower case.
	quote func(string) string
	// nameList aggregates "Id Name" of a group of users, in Id order.
	nameList string
	// damaged, if not "", lists the damage a check of the database
	// finds; any refuses adoption.
	damaged string
	// fixFollows makes what verifyFollows found missing or wrong right.
	fixFollows func(ctx context.Context, r runner, def tableDef, fx fixes) error
	// setDefault, if not nil, is the statement that gives a table's
	// column a default (not SQLite, which rebuilds Follows for that and
	// cannot for Users).
	setDefault func(table, column string, c laterColumn) string
	// catalogue reads tables' definitions.
	catalogue followsCatalogue
	// afterCheck, if not "", lists rows that break a constraint the
	// adoption did not enforce as it went (SQLite's foreign keys), one
	// problem a row; any refuses the commit.
	afterCheck string
	// joinEntity are the steps, beyond migration 1's missing objects,
	// that an adopted Follows table needs for the server's writes;
	// laterSteps says what the later migrations do to it beyond adding
	// counts, blocks and settings, for the plan.
	joinEntity []adoptStep
	laterSteps string
}

// adoptStep is a statement an adoption runs and what its plan says of it.
type adoptStep struct{ says, stmt string }

// adopt finds the database's shape and adopts it in r's transaction, then
// runs the migrations not yet applied there too. On this server's own or a
// new database it does nothing unless dry, which runs the pending
// migrations to see that they would succeed.
func (s *Store) adopt(ctx context.Context, r runner, dry bool) (Plan, error) {
	a := s.adoption()
	if a.lock != "" {
		if _, err := r.exec(ctx, a.lock); err != nil {
			return Plan{}, fmt.Errorf("adopt: wait for other instances: %w", err)
		}
	}
	tables, err := catalogueTables(ctx, r, a.tables)
	if err != nil {
		return Plan{}, err
	}
	shape, err := shapeOf(tables)
	if err != nil {
		return Plan{}, fmt.Errorf("adopt: %w", err)
	}
	plan := Plan{Shape: shape}
	switch shape {
	case ShapeNew:
		if dry {
			err = markMigrated(ctx, r)
		}
	case ShapeConvention:
		plan, err = s.convertUserUser(ctx, r)
	case ShapeJoinEntity:
		plan, err = s.adoptFollows(ctx, r)
	}
	if err == nil && (plan.Shape == ShapeConvention || plan.Shape == ShapeJoinEntity) {
		var says []string
		says, err = s.verifyUsers(ctx, r)
		plan.Steps = append(plan.Steps, says...)
	}
	if err != nil {
		return plan, err
	}
	if !dry && (plan.Shape == ShapeOurs || plan.Shape == ShapeNew) {
		return plan, nil
	}
	if plan.Migrations, err = s.migrateInTx(ctx, r); err != nil {
		return plan, fmt.Errorf("%w (in the adopting transaction: nothing was changed)", err)
	}
	if a.afterCheck != "" {
		if bad, err := problems(ctx, r, map[string]string{"a foreign key broken": a.afterCheck}); err != nil {
			return plan, fmt.Errorf("adopt: check foreign keys: %w", err)
		} else if len(bad) > 0 {
			return plan, &AdoptionError{Problems: bad}
		}
	}
	return plan, nil
}

// shapeOf names a database's shape from the tables it has (see the
// Shape constants): adoption and export tell shapes apart by this one
// rule.
func shapeOf(tables map[string]bool) (string, error) {
	switch {
	case tables[goose.DefaultTablename]:
		return ShapeOurs, nil
	case !tables["Users"]:
		return ShapeNew, nil
	case tables["Follows"]:
		return ShapeJoinEntity, nil
	case tables["UserUser"]:
		return ShapeConvention, nil
	}
	return "", errors.New("a Users table without follows (neither UserUser nor Follows): not a database of this model")
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

// refuseBadRows runs the checks of a shape's rows, and the Users checks,
// each a query listing offending rows, and refuses adoption when any row
// is.
func (s *Store) refuseBadRows(ctx context.Context, r runner, checks map[string]string) error {
	// Names are ASCII, so lower() compares them as SQLite's NOCASE does.
	checks["two users share a name (names are unique without regard to case)"] = `SELECT ` + s.adoption().nameList + ` FROM Users GROUP BY lower(Name) HAVING COUNT(*) > 1`
	checks["a user without a name"] = `SELECT CONCAT(Id, '') FROM Users WHERE Name IS NULL OR Name = ''`
	if d := s.adoption().damaged; d != "" {
		checks["the database is damaged"] = d
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

// problems runs checks that each list offending rows, one per row, and
// says them in the order of the checks' names.
func problems(ctx context.Context, r runner, checks map[string]string) ([]string, error) {
	var out []string
	for _, what := range slices.Sorted(maps.Keys(checks)) {
		rows, err := r.query(ctx, checks[what])
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

// followPair says a follow row as "follower -> followee".
const followPair = `CONCAT(FollowerId, ' -> ', FolloweeId)`

func (s *Store) convertUserUser(ctx context.Context, r runner) (Plan, error) {
	q := s.adoption().quote
	userUser, followers, following := q("UserUser"), q("FollowersId"), q("FollowingId")
	var rowCount int
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM `+userUser, nil, &rowCount); err != nil {
		return Plan{}, fmt.Errorf("adopt: read UserUser: %w", err)
	}
	plan := Plan{Shape: ShapeConvention, Steps: []string{
		"check UserUser and Users for rows the Follows constraints would refuse",
		"create Follows with its keys, CK_Follows_NoSelfFollow, foreign keys and keyset indexes",
		fmt.Sprintf("copy %d rows: FollowerId = FollowersId (the follower), FolloweeId = FollowingId (the one followed), CreatedAt = now", rowCount),
		"check that Follows holds as many rows as UserUser, then drop UserUser",
		"record the schema as at migration 1; later migrations add counts, blocks and settings",
	}}
	pair := `CONCAT(` + followers + `, ' -> ', ` + following + `)`
	checks := map[string]string{
		"a user following itself (UserUser row)":            `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + followers + ` = ` + following,
		"a follower that is not a user (UserUser row)":      `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + followers + ` NOT IN (SELECT Id FROM Users)`,
		"a followed user that is not a user (UserUser row)": `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + following + ` NOT IN (SELECT Id FROM Users)`,
	}
	if err := s.refuseBadRows(ctx, r, checks); err != nil {
		return plan, err
	}
	if err := s.createFollowsSchema(ctx, r); err != nil {
		return plan, err
	}
	if _, err := r.exec(ctx, `INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt)
SELECT `+followers+`, `+following+`, ? FROM `+userUser, s.d.timeArg(time.Now())); err != nil {
		return plan, fmt.Errorf("adopt: copy UserUser into Follows: %w", err)
	}
	var copied int
	if err := r.queryRow(ctx, `SELECT COUNT(*) FROM Follows`, nil, &copied); err != nil {
		return plan, err
	}
	if copied != rowCount {
		return plan, fmt.Errorf("adopt: Follows holds %d rows after copying %d from UserUser; nothing was changed", copied, rowCount)
	}
	if _, err := r.exec(ctx, `DROP TABLE `+userUser); err != nil {
		return plan, fmt.Errorf("adopt: drop UserUser: %w", err)
	}
	return plan, markMigrated(ctx, r, 1)
}

func (s *Store) adoptFollows(ctx context.Context, r runner) (Plan, error) {
	a := s.adoption()
	plan := Plan{Shape: ShapeJoinEntity, Steps: []string{
		"keep Follows and its rows as they are",
		"check Follows and Users for rows the Follows constraints would refuse",
		"read Follows' definition: its primary key, the no-self-follow CHECK, the foreign keys' delete actions, the columns' defaults",
	}}
	checks := map[string]string{
		"a user following itself (Follows row)": `SELECT ` + followPair + ` FROM Follows WHERE FollowerId = FolloweeId`,
		"a follow of or by a missing user (Follows row)": `SELECT ` + followPair + ` FROM Follows
WHERE FollowerId NOT IN (SELECT Id FROM Users) OR FolloweeId NOT IN (SELECT Id FROM Users)`,
	}
	if err := s.refuseBadRows(ctx, r, checks); err != nil {
		return plan, err
	}
	def, err := a.catalogue.describe(ctx, r)
	if err != nil {
		return plan, fmt.Errorf("adopt: read the definition of Follows: %w", err)
	}
	later, err := laterColumns(s.d.name(), "Follows")
	if err != nil {
		return plan, err
	}
	fx, refused := verifyFollows(def, later)
	if len(refused) > 0 {
		return plan, &AdoptionError{Problems: refused}
	}
	plan.Steps = append(plan.Steps, fx.says...)
	if !fx.none() {
		if err := a.fixFollows(ctx, r, def, fx); err != nil {
			return plan, fmt.Errorf("adopt: make Follows' definition right: %w", err)
		}
	}
	plan.Steps = append(plan.Steps, "add what is missing of IX_Users_Name and the two keyset indexes on Follows")
	if err := s.createFollowsSchema(ctx, r); err != nil {
		return plan, err
	}
	for _, st := range a.joinEntity {
		plan.Steps = append(plan.Steps, st.says)
		if _, err := r.exec(ctx, st.stmt); err != nil {
			return plan, fmt.Errorf("adopt: %s: %w", st.says, err)
		}
	}
	plan.Steps = append(plan.Steps, "record the schema as at migration 1; later migrations add counts, blocks and settings (keeping the columns and indexes already there)"+a.laterSteps)
	return plan, markMigrated(ctx, r, 1)
}

// verifyUsers checks the columns of Users that an EF model may have and
// that the server's sign-ups leave out: each must be nullable or take a
// default. One a later migration adds is given that migration's default
// where the dialect can (not SQLite, which would have to rebuild Users);
// its type is the app's. It returns what it did.
func (s *Store) verifyUsers(ctx context.Context, r runner) ([]string, error) {
	a := s.adoption()
	cols, err := a.catalogue.describeColumns(ctx, r, "Users")
	if err != nil {
		return nil, fmt.Errorf("adopt: read the definition of Users: %w", err)
	}
	later, err := laterColumns(s.d.name(), "Users")
	if err != nil {
		return nil, err
	}
	var says, refused []string
	for _, c := range cols {
		if !c.notNull || c.hasDefault || c.generated || c.name == "Id" || c.name == "Name" {
			continue
		}
		lc, isLater := later[c.name]
		switch {
		case isLater && lc.dflt != "" && a.setDefault != nil:
			if _, err := r.exec(ctx, a.setDefault("Users", c.name, lc)); err != nil {
				return says, fmt.Errorf("adopt: give Users.%s a default: %w", c.name, err)
			}
			says = append(says, fmt.Sprintf("give Users.%s the default %s, which the server's sign-ups, not setting it, take", c.name, lc.dflt))
		case isLater && lc.dflt != "":
			refused = append(refused, fmt.Sprintf("Users.%s is NOT NULL without a default, which SQLite cannot add without rebuilding Users: give it DEFAULT %s", c.name, lc.dflt))
		default:
			refused = append(refused, fmt.Sprintf("Users.%s is NOT NULL without a default: the server's sign-ups, which do not set it, would be refused; give it a default or make it nullable", c.name))
		}
	}
	if len(refused) > 0 {
		return says, &AdoptionError{Problems: refused}
	}
	return says, nil
}

// createFollowsSchema runs migration 1's statements that are missing:
// everything but the Users table, which EF Core made, and objects that
// exist already under their name.
func (s *Store) createFollowsSchema(ctx context.Context, r runner) error {
	src, err := fs.ReadFile(migrations, "migrations/"+s.d.name()+"/00001_users_and_follows.sql")
	if err != nil {
		return err
	}
	for _, stmt := range upStatements(string(src)) {
		name := createdName(stmt)
		if name == "Users" {
			continue
		}
		var n int
		if err := r.queryRow(ctx, s.adoption().exists, []any{name}, &n); err != nil {
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

// A migration statement that adds one column, or creates an index or
// table, and the names it adds; the migrations add one column a
// statement, so that each can be skipped alone.
var (
	addColumnRE   = regexp.MustCompile(`(?is)^ALTER TABLE\s+["\[]?(\w+)["\]]?\s+ADD\s+(?:COLUMN\s+)?["\[]?(\w+)["\]]?\s+(.*?);?$`)
	createIndexRE = regexp.MustCompile(`(?is)^CREATE\s+(?:UNIQUE\s+)?INDEX\s+["\[]?(\w+)["\]]?`)
)

// createdName is the name a CREATE TABLE or CREATE INDEX statement
// creates.
func createdName(stmt string) string {
	for _, line := range strings.Split(stmt, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "CREATE") {
			if i := strings.IndexAny(line, `"[`); i >= 0 {
				if j := strings.IndexAny(line[i+1:], `"]`); j >= 0 {
					return line[i+1 : i+1+j]
				}
			}
		}
	}
	return ""
}

// withoutComments drops a statement's leading comment lines.
func withoutComments(stmt string) string {
	for {
		stmt = strings.TrimSpace(stmt)
		if !strings.HasPrefix(stmt, "--") {
			return stmt
		}
		_, rest, _ := strings.Cut(stmt, "\n")
		stmt = rest
	}
}

// migration is one of a dialect's migration files.
type migration struct {
	version int64
	name    string
	src     string
}

func migrationFiles(dialect string) ([]migration, error) {
	dir := "migrations/" + dialect
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version: %w", e.Name(), err)
		}
		src, err := fs.ReadFile(migrations, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(src)})
	}
	slices.SortFunc(out, func(a, b migration) int { return int(a.version - b.version) })
	return out, nil
}

// laterColumn is a column a migration after the first adds to a table:
// its type and the default the migration gives it.
type laterColumn struct {
	typ, dflt, def string
}

// laterColumns are the columns the migrations after the first add to
// table, read from their ALTER TABLE ... ADD statements.
func laterColumns(dialect, table string) (map[string]laterColumn, error) {
	files, err := migrationFiles(dialect)
	if err != nil {
		return nil, err
	}
	out := map[string]laterColumn{}
	for _, m := range files[1:] {
		for _, stmt := range upStatements(m.src) {
			sub := addColumnRE.FindStringSubmatch(withoutComments(stmt))
			if sub == nil || sub[1] != table {
				continue
			}
			def := strings.TrimSpace(sub[3])
			typ, _, _ := strings.Cut(def, " ")
			c := laterColumn{typ: strings.ToLower(typ), def: def}
			if _, d, ok := strings.Cut(def, " DEFAULT "); ok {
				c.dflt = strings.TrimSpace(d)
			}
			out[sub[2]] = c
		}
	}
	return out, nil
}

// migrateInTx runs, in r's transaction, the migrations not applied yet,
// recording each in goose's table as goose would. A statement that adds a
// column or an index that is there already is skipped: an EF model may
// have added Follows' settings, and adoption checked their definition. A
// migration goose must run outside a transaction, and those after it, are
// left to goose, which runs after the commit.
func (s *Store) migrateInTx(ctx context.Context, r runner) ([]string, error) {
	st, err := database.NewStore(s.d.gooseDialect(), goose.DefaultTablename)
	if err != nil {
		return nil, err
	}
	applied := map[int64]bool{}
	list, err := st.ListMigrations(ctx, r.tx)
	if err != nil {
		return nil, fmt.Errorf("read the applied migrations: %w", err)
	}
	for _, m := range list {
		applied[m.Version] = m.IsApplied
	}
	files, err := migrationFiles(s.d.name())
	if err != nil {
		return nil, err
	}
	var ran []string
	for _, m := range files {
		if applied[m.version] {
			continue
		}
		if strings.Contains(m.src, "-- +goose NO TRANSACTION") {
			break
		}
		for _, stmt := range upStatements(m.src) {
			there, err := s.alreadyThere(ctx, r, withoutComments(stmt))
			if err != nil {
				return ran, fmt.Errorf("migration %s: %w", m.name, err)
			}
			if there {
				continue
			}
			if _, err := r.tx.ExecContext(ctx, stmt); err != nil {
				return ran, fmt.Errorf("migration %s: %w", m.name, s.d.classify(err))
			}
		}
		if err := st.Insert(ctx, r.tx, database.InsertRequest{Version: m.version}); err != nil {
			return ran, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		ran = append(ran, m.name)
	}
	return ran, nil
}

// alreadyThere reports whether stmt adds a column or an index that exists.
func (s *Store) alreadyThere(ctx context.Context, r runner, stmt string) (bool, error) {
	var n int
	if sub := addColumnRE.FindStringSubmatch(stmt); sub != nil {
		if err := r.queryRow(ctx, s.adoption().columnExists, []any{sub[1], sub[2]}, &n); err != nil {
			return false, err
		}
	} else if sub := createIndexRE.FindStringSubmatch(stmt); sub != nil {
		if err := r.queryRow(ctx, s.adoption().exists, []any{sub[1]}, &n); err != nil {
			return false, err
		}
	}
	return n > 0, nil
}

// markMigrated records, in goose's own table (made if need be), that the
// given migrations are applied, after goose's version 0.
func markMigrated(ctx context.Context, r runner, versions ...int64) error {
	st, err := database.NewStore(r.s.d.gooseDialect(), goose.DefaultTablename)
	if err != nil {
		return err
	}
	if err := st.CreateVersionTable(ctx, r.tx); err != nil {
		return fmt.Errorf("adopt: create the migration table: %w", err)
	}
	for _, v := range append([]int64{0}, versions...) {
		if err := st.Insert(ctx, r.tx, database.InsertRequest{Version: v}); err != nil {
			return fmt.Errorf("adopt: record migration %d: %w", v, err)
		}
	}
	return nil
}
