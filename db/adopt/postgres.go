package adopt

import (
	"context"

	"github.com/pressly/goose/v3/database"
)

// Postgres is the adoption of a database EF Core's Npgsql provider made.
// It reads the catalogue's pg_constraint and pg_attribute, and makes fixes
// with ALTER TABLE in the adopting transaction. The statements' model
// names are quoted by the store's Rebind; EF's own (UserUser...) by Quote.
func Postgres() Dialect { return postgres{postgresCatalogue} }

type postgres struct{ catalogue }

var (
	_ Locker    = postgres{}
	_ Defaulter = postgres{}
)

func (postgres) Goose() database.Dialect  { return database.DialectPostgres }
func (postgres) Quote(name string) string { return `"` + name + `"` }

// NameKey: IX_Users_Name is on lower("Name").
func (postgres) NameKey(col string) string { return `lower(` + col + `)` }

// NameChecks: none the server can state by a row's length. text and
// character varying take any name, and an expression index on lower()
// needs no change of the column; a B-tree entry is limited to about a
// third of a page after compression, so a name of some kilobytes would
// fail migration 1's index with PostgreSQL's own error, rolling the whole
// adoption back.
func (postgres) NameChecks() map[string]string                 { return nil }
func (postgres) FitName(context.Context, Tx) ([]string, error) { return nil, nil }

// CreatedAtProblem: none is checked. Npgsql 6 and later map DateTime to
// timestamp with time zone, as the server's migrations make it; a column
// an older provider made timestamp without time zone is taken as it is.
func (postgres) CreatedAtProblem(Column) string { return "" }
func (postgres) LaterSteps() string             { return "" }

// Lock is held until the adopting transaction ends; the key is the
// server's own, apart from goose's migration lock.
func (postgres) Lock(ctx context.Context, tx Tx) error {
	return exec(ctx, tx, `SELECT pg_advisory_xact_lock(hashtext('follows: adopt an EF Core database'))`)
}

func (postgres) SetDefault(table, col string, c laterColumn) string {
	return `ALTER TABLE ` + table + ` ALTER COLUMN ` + col + ` SET DEFAULT ` + c.dflt
}

func (d postgres) FixFollows(ctx context.Context, tx Tx, _ table, fx fixes) error {
	return alterFollows(ctx, tx, d, fx)
}

func (postgres) JoinEntitySteps() []Step {
	return []Step{{
		// EF Core sets CreatedAt itself; the server's follows take the
		// database's time.
		Says: "give Follows.CreatedAt the default clock_timestamp(), which the server's follows take",
		Stmt: `ALTER TABLE Follows ALTER COLUMN CreatedAt SET DEFAULT clock_timestamp()`,
	}}
}

var postgresCatalogue = catalogue{
	tables: `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
	exists: `SELECT COUNT(*) FROM pg_class WHERE relname = ? AND relnamespace = current_schema()::regnamespace`,
	columns: `SELECT a.attname, format_type(a.atttypid, NULL), a.attnotnull, a.atthasdef OR a.attidentity <> '',
  pg_get_expr(d.adbin, d.adrelid), a.attgenerated <> ''
FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = to_regclass(quote_ident(?)) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
	pk: `SELECT a.attname FROM pg_constraint AS c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
WHERE c.conrelid = '"Follows"'::regclass AND c.contype = 'p' ORDER BY k.n`,
	checks: `SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '"Follows"'::regclass AND contype = 'c'`,
	fks: `SELECT c.conname, a.attname, t.relname, fa.attname,
  CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END,
  cardinality(c.conkey)
FROM pg_constraint AS c
JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
JOIN pg_class AS t ON t.oid = c.confrelid
JOIN pg_attribute AS fa ON fa.attrelid = c.confrelid AND fa.attnum = c.confkey[1]
WHERE c.conrelid = '"Follows"'::regclass AND c.contype = 'f'`,
}
