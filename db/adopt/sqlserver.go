package adopt

import (
	"context"
	"strings"

	"github.com/pressly/goose/v3/database"
)

// SQLServer is the adoption of a database EF Core made on SQL Server. It
// reads sys.tables, sys.columns, sys.indexes, sys.check_constraints (their
// definition) and sys.foreign_keys (their delete_referential_action), and
// makes fixes with ALTER TABLE in the adopting transaction, which SQL
// Server allows for DDL. No SQL Server runs where the server is developed:
// these statements run in the tests when MSSQL_DSN names one, and every
// case they handle has a SQLite and a PostgreSQL twin that runs always,
// but for Users.Name's type and collation and CreatedAt's type, which only
// SQL Server's adoption changes or checks (sqlserver_name.go). Its
// statements keep to SQL Server 2016 (compatibility level 130), the
// server's floor: no STRING_AGG or CONCAT_WS.
func SQLServer() Dialect { return sqlserver{sqlserverCatalogue} }

type sqlserver struct{ catalogue }

var (
	_ Locker    = sqlserver{}
	_ Defaulter = sqlserver{}
)

func (sqlserver) Goose() database.Dialect  { return database.DialectMSSQL }
func (sqlserver) Quote(name string) string { return "[" + name + "]" }
func (sqlserver) LaterSteps() string       { return "" }

// Lock is held until the adopting transaction ends. sp_getapplock says a
// timeout in its return value, not as an error.
func (sqlserver) Lock(ctx context.Context, tx Tx) error {
	return exec(ctx, tx, `DECLARE @got int;
EXEC @got = sp_getapplock @Resource = N'follows: adopt an EF Core database', @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = 300000;
IF @got < 0 THROW 50000, N'another instance held the adoption lock for five minutes', 1;`)
}

func (sqlserver) SetDefault(table, col string, c laterColumn) string {
	name := "DF_" + table + "_" + col
	if _, after, ok := strings.Cut(c.def, "CONSTRAINT ["); ok {
		name, _, _ = strings.Cut(after, "]")
	}
	return `ALTER TABLE ` + table + ` ADD CONSTRAINT ` + name + ` DEFAULT ` + c.dflt + ` FOR ` + col
}

func (d sqlserver) FixFollows(ctx context.Context, tx Tx, _ table, fx fixes) error {
	return alterFollows(ctx, tx, d, fx)
}

func (sqlserver) JoinEntitySteps() []Step {
	return []Step{{
		// EF Core sets CreatedAt itself; the server's follows take the
		// column's default (see the store's insertFollow).
		Says: "give Follows.CreatedAt the default SYSUTCDATETIME(), which the server's follows take, unless it has one",
		Stmt: `IF NOT EXISTS (SELECT 1 FROM sys.default_constraints WHERE parent_object_id = OBJECT_ID(N'Follows')
    AND parent_column_id = COLUMNPROPERTY(OBJECT_ID(N'Follows'), 'CreatedAt', 'ColumnId'))
  ALTER TABLE Follows ADD CONSTRAINT DF_Follows_CreatedAt DEFAULT SYSUTCDATETIME() FOR CreatedAt`,
	}}
}

var sqlserverCatalogue = catalogue{
	tables: `SELECT name FROM sys.tables WHERE schema_id = SCHEMA_ID()`,
	exists: `SELECT COUNT(*) FROM (SELECT name FROM sys.objects WHERE schema_id = SCHEMA_ID()
  UNION ALL SELECT i.name FROM sys.indexes AS i JOIN sys.tables AS t ON t.object_id = i.object_id WHERE t.schema_id = SCHEMA_ID()) AS o
WHERE o.name = ?`,
	columns: `SELECT c.name, LOWER(TYPE_NAME(c.user_type_id)), CASE WHEN c.is_nullable = 0 THEN 1 ELSE 0 END,
  CASE WHEN c.default_object_id <> 0 OR c.is_identity = 1 THEN 1 ELSE 0 END,
  OBJECT_DEFINITION(c.default_object_id), CASE WHEN c.is_computed = 1 THEN 1 ELSE 0 END
FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id`,
	pk: `SELECT col.name FROM sys.indexes AS i
JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id
JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id
WHERE i.object_id = OBJECT_ID(N'Follows') AND i.is_primary_key = 1 ORDER BY ic.key_ordinal`,
	checks: `SELECT name, definition FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'Follows')`,
	fks: `SELECT fk.name, pc.name, OBJECT_NAME(fk.referenced_object_id), rc.name, fk.delete_referential_action_desc,
  (SELECT COUNT(*) FROM sys.foreign_key_columns AS x WHERE x.constraint_object_id = fk.object_id)
FROM sys.foreign_keys AS fk
JOIN sys.foreign_key_columns AS fkc ON fkc.constraint_object_id = fk.object_id
JOIN sys.columns AS pc ON pc.object_id = fkc.parent_object_id AND pc.column_id = fkc.parent_column_id
JOIN sys.columns AS rc ON rc.object_id = fkc.referenced_object_id AND rc.column_id = fkc.referenced_column_id
WHERE fk.parent_object_id = OBJECT_ID(N'Follows')`,
}
