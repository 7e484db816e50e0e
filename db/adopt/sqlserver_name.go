package adopt

// nameCollation is Users.Name's collation on SQL Server: case-insensitive
// whatever the database's default, as NOCASE on SQLite and lower() on
// PostgreSQL.
const nameCollation = "Latin1_General_100_CI_AS"

// NameKey compares names in nameCollation, as IX_Users_Name will once
// Name is in it: GROUP BY and = then take the same names for one as the
// unique index, trailing spaces ignored as SQL Server's comparisons do.
// lower() would not do: it compares in the column's collation, which may
// ignore accents (..._CI_AI) where the index will not.
func (sqlserver) NameKey(col string) string { return col + ` COLLATE ` + nameCollation }
