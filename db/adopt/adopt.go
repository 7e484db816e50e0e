// Package adopt adopts an existing EF Core database for the follower
// model: it reads the database's catalogue, makes its tables the server's
// and runs the server's migrations, in the one transaction the store gives
// it. The store calls it before it opens a database; it knows nothing of
// the store, only a transaction (Tx), the dialect's migrations and its
// catalogue (Dialect).
package adopt

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
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
//     from the catalogue and checked (verify.go): what is missing or
//     wrong and can be made right (the no-self-follow CHECK, the foreign
//     keys' delete actions, defaults) is, once the rows are known to obey
//     it; what cannot is refused, saying why.
//
// Either way the database is then recorded as at migration 1, and the
// later migrations run in the same transaction (migrations.go), tolerating
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

// Error is an adoption refused for rows that would break the
// server's constraints, or a definition the server cannot work with. The
// database is left as it was.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	return "cannot adopt the database, nothing was changed:\n  " + strings.Join(e.Problems, "\n  ")
}

// adoption is one adoption's transaction, migrations and dialect.
type adoption struct {
	tx         Tx
	d          Dialect
	migrations fs.FS
}

// Run finds the database's shape and adopts it in tx, then runs there
// too the migrations (migrations holds the dialect's goose files) not yet
// applied. On this server's own or a new database it does nothing unless
// dry, which runs the pending migrations to see that they would succeed.
// The caller commits tx, or in a dry run rolls it back.
func Run(ctx context.Context, tx Tx, migrations fs.FS, d Dialect, dry bool) (Plan, error) {
	a := adoption{tx: tx, d: d, migrations: migrations}
	if l, ok := d.(Locker); ok {
		if err := l.Lock(ctx, tx); err != nil {
			return Plan{}, fmt.Errorf("adopt: wait for other instances: %w", err)
		}
	}
	tables, err := d.Tables(ctx, tx)
	if err != nil {
		return Plan{}, err
	}
	shape, err := ShapeOf(tables)
	if err != nil {
		return Plan{}, fmt.Errorf("adopt: %w", err)
	}
	plan := Plan{Shape: shape}
	switch shape {
	case ShapeNew:
		if dry {
			err = a.markMigrated(ctx)
		}
	case ShapeConvention:
		plan, err = a.convertUserUser(ctx)
	case ShapeJoinEntity:
		plan, err = a.adoptFollows(ctx)
	}
	if err == nil && (plan.Shape == ShapeConvention || plan.Shape == ShapeJoinEntity) {
		var says []string
		says, err = a.verifyUsers(ctx)
		plan.Steps = append(plan.Steps, says...)
	}
	if err != nil {
		return plan, err
	}
	if !dry && (plan.Shape == ShapeOurs || plan.Shape == ShapeNew) {
		return plan, nil
	}
	if plan.Migrations, err = a.migrateInTx(ctx); err != nil {
		return plan, fmt.Errorf("%w (in the adopting transaction: nothing was changed)", err)
	}
	if k, ok := d.(KeyChecker); ok {
		if bad, err := a.problems(ctx, map[string]string{"a foreign key broken": k.BrokenKeys()}); err != nil {
			return plan, fmt.Errorf("adopt: check foreign keys: %w", err)
		} else if len(bad) > 0 {
			return plan, &Error{Problems: bad}
		}
	}
	return plan, nil
}

// ShapeOf names a database's shape from the tables it has (see the
// Shape constants): adoption and export tell shapes apart by this one
// rule.
func ShapeOf(tables map[string]bool) (string, error) {
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

// refuseBadRows runs the checks of a shape's rows, and the Users checks,
// each a query listing offending rows, and refuses adoption when any row
// is.
func (a adoption) refuseBadRows(ctx context.Context, checks map[string]string) error {
	checks["a user without a name"] = `SELECT CONCAT(Id, '') FROM Users WHERE Name IS NULL OR Name = ''`
	for what, q := range a.d.NameChecks() {
		checks[what] = q
	}
	if d, ok := a.d.(DamageChecker); ok {
		checks["the database is damaged"] = d.Damaged()
	}
	bad, err := a.problems(ctx, checks)
	if err != nil {
		return fmt.Errorf("adopt: check rows: %w", err)
	}
	shared, err := a.sharedNames(ctx)
	if err != nil {
		return fmt.Errorf("adopt: check names: %w", err)
	}
	if bad = append(bad, shared...); len(bad) > 0 {
		return &Error{Problems: bad}
	}
	return nil
}

// sharedNames lists the users whose names IX_Users_Name would take for
// one, a line a name: "1 alice, 6 ALICE". The rows are read and grouped
// here rather than aggregated by the database, so one query serves every
// dialect (SQL Server has STRING_AGG only from 2017, and the server's
// floor is 2016).
func (a adoption) sharedNames(ctx context.Context) ([]string, error) {
	key := a.d.NameKey
	q := `SELECT d.first_id, u.Id, u.Name FROM Users AS u
JOIN (SELECT MIN(Id) AS first_id, ` + key("Name") + ` AS name_key FROM Users GROUP BY ` + key("Name") + ` HAVING COUNT(*) > 1) AS d
  ON ` + key("u.Name") + ` = d.name_key
ORDER BY d.first_id, u.Id`
	var out []string
	group := int64(-1)
	err := scanRows(ctx, a.tx, q, func(rs *sql.Rows) error {
		var first, id int64
		var name string
		if err := rs.Scan(&first, &id, &name); err != nil {
			return err
		}
		user := fmt.Sprintf("%d %s", id, name)
		if first != group {
			group = first
			out = append(out, "two users share a name (names are unique without regard to case): "+user)
		} else {
			out[len(out)-1] += ", " + user
		}
		return nil
	})
	return out, err
}

// fitName makes Users.Name right for IX_Users_Name (see Dialect.FitName)
// and adds what it did to the plan.
func (a adoption) fitName(ctx context.Context, plan *Plan) error {
	says, err := a.d.FitName(ctx, a.tx)
	plan.Steps = append(plan.Steps, says...)
	if err != nil {
		var refused *Error
		if errors.As(err, &refused) {
			return err
		}
		return fmt.Errorf("adopt: make Users.Name one IX_Users_Name can index: %w", err)
	}
	return nil
}

// problems runs checks that each list offending rows, one per row, and
// says them in the order of the checks' names.
func (a adoption) problems(ctx context.Context, checks map[string]string) ([]string, error) {
	var out []string
	for _, what := range slices.Sorted(maps.Keys(checks)) {
		err := scanRows(ctx, a.tx, checks[what], func(rs *sql.Rows) error {
			var row string
			err := rs.Scan(&row)
			out = append(out, what+": "+row)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// followPair says a follow row as "follower -> followee".
const followPair = `CONCAT(FollowerId, ' -> ', FolloweeId)`

func (a adoption) convertUserUser(ctx context.Context) (Plan, error) {
	q := a.d.Quote
	userUser, followers, following := q("UserUser"), q("FollowersId"), q("FollowingId")
	var rowCount int
	if err := queryRow(ctx, a.tx, `SELECT COUNT(*) FROM `+userUser, nil, &rowCount); err != nil {
		return Plan{}, fmt.Errorf("adopt: read UserUser: %w", err)
	}
	plan := Plan{Shape: ShapeConvention, Steps: []string{
		"check UserUser and Users for rows the Follows constraints would refuse",
	}}
	converting := []string{
		"create Follows with its keys, CK_Follows_NoSelfFollow, foreign keys and keyset indexes",
		fmt.Sprintf("copy %d rows: FollowerId = FollowersId (the follower), FolloweeId = FollowingId (the one followed), CreatedAt = now", rowCount),
		"check that Follows holds as many rows as UserUser, then drop UserUser",
		"record the schema as at migration 1; later migrations add counts, blocks and settings",
	}
	pair := `CONCAT(` + followers + `, ' -> ', ` + following + `)`
	checks := map[string]string{
		"a user following itself (UserUser row)":            `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + followers + ` = ` + following,
		"a follower that is not a user (UserUser row)":      `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + followers + ` NOT IN (SELECT Id FROM Users)`,
		"a followed user that is not a user (UserUser row)": `SELECT ` + pair + ` FROM ` + userUser + ` WHERE ` + following + ` NOT IN (SELECT Id FROM Users)`,
	}
	if err := a.refuseBadRows(ctx, checks); err != nil {
		return plan, err
	}
	if err := a.fitName(ctx, &plan); err != nil {
		return plan, err
	}
	plan.Steps = append(plan.Steps, converting...)
	if err := a.createFollowsSchema(ctx); err != nil {
		return plan, err
	}
	if err := exec(ctx, a.tx, `INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt)
SELECT `+followers+`, `+following+`, ? FROM `+userUser, a.tx.TimeArg(time.Now())); err != nil {
		return plan, fmt.Errorf("adopt: copy UserUser into Follows: %w", err)
	}
	var copied int
	if err := queryRow(ctx, a.tx, `SELECT COUNT(*) FROM Follows`, nil, &copied); err != nil {
		return plan, err
	}
	if copied != rowCount {
		return plan, fmt.Errorf("adopt: Follows holds %d rows after copying %d from UserUser; nothing was changed", copied, rowCount)
	}
	if err := exec(ctx, a.tx, `DROP TABLE `+userUser); err != nil {
		return plan, fmt.Errorf("adopt: drop UserUser: %w", err)
	}
	return plan, a.markMigrated(ctx, 1)
}

func (a adoption) adoptFollows(ctx context.Context) (Plan, error) {
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
	if err := a.refuseBadRows(ctx, checks); err != nil {
		return plan, err
	}
	def, err := a.d.Follows(ctx, a.tx)
	if err != nil {
		return plan, fmt.Errorf("adopt: read the definition of Follows: %w", err)
	}
	later, err := a.laterColumns("Follows")
	if err != nil {
		return plan, err
	}
	fx, refused := verifyFollows(def, later)
	if c, ok := def.column("CreatedAt"); ok {
		if why := a.d.CreatedAtProblem(c); why != "" {
			refused = append(refused, why)
		}
	}
	if len(refused) > 0 {
		return plan, &Error{Problems: refused}
	}
	plan.Steps = append(plan.Steps, fx.says...)
	if !fx.none() {
		if err := a.d.FixFollows(ctx, a.tx, def, fx); err != nil {
			return plan, fmt.Errorf("adopt: make Follows' definition right: %w", err)
		}
	}
	if err := a.fitName(ctx, &plan); err != nil {
		return plan, err
	}
	plan.Steps = append(plan.Steps, "add what is missing of IX_Users_Name and the two keyset indexes on Follows")
	if err := a.createFollowsSchema(ctx); err != nil {
		return plan, err
	}
	for _, st := range a.d.JoinEntitySteps() {
		plan.Steps = append(plan.Steps, st.Says)
		if err := exec(ctx, a.tx, st.Stmt); err != nil {
			return plan, fmt.Errorf("adopt: %s: %w", st.Says, err)
		}
	}
	plan.Steps = append(plan.Steps, "record the schema as at migration 1; later migrations add counts, blocks and settings (keeping the columns and indexes already there)"+a.d.LaterSteps())
	return plan, a.markMigrated(ctx, 1)
}

// verifyUsers checks the columns of Users that an EF model may have and
// that the server's sign-ups leave out: each must be nullable or take a
// default. One a later migration adds is given that migration's default
// where the dialect can (not SQLite, which would have to rebuild Users);
// its type is the app's. It returns what it did.
func (a adoption) verifyUsers(ctx context.Context) ([]string, error) {
	cols, err := a.d.Columns(ctx, a.tx, "Users")
	if err != nil {
		return nil, fmt.Errorf("adopt: read the definition of Users: %w", err)
	}
	later, err := a.laterColumns("Users")
	if err != nil {
		return nil, err
	}
	defaulter, canDefault := a.d.(Defaulter)
	var says, refused []string
	for _, c := range cols {
		if !c.NotNull || c.HasDefault || c.Generated || c.Name == "Id" || c.Name == "Name" {
			continue
		}
		lc, isLater := later[c.Name]
		switch {
		case isLater && lc.dflt != "" && canDefault:
			if err := exec(ctx, a.tx, defaulter.SetDefault("Users", c.Name, lc)); err != nil {
				return says, fmt.Errorf("adopt: give Users.%s a default: %w", c.Name, err)
			}
			says = append(says, fmt.Sprintf("give Users.%s the default %s, which the server's sign-ups, not setting it, take", c.Name, lc.dflt))
		case isLater && lc.dflt != "":
			refused = append(refused, fmt.Sprintf("Users.%s is NOT NULL without a default, which SQLite cannot add without rebuilding Users: give it DEFAULT %s", c.Name, lc.dflt))
		default:
			refused = append(refused, fmt.Sprintf("Users.%s is NOT NULL without a default: the server's sign-ups, which do not set it, would be refused; give it a default or make it nullable", c.Name))
		}
	}
	if len(refused) > 0 {
		return says, &Error{Problems: refused}
	}
	return says, nil
}
