package adopt_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// mssqlSnapshot says a SQL Server database's tables and their rows,
// columns (type, length, collation), constraints (definitions and delete
// actions) and indexes. Its queries keep to SQL Server 2016 (no
// STRING_AGG or CONCAT_WS), the server's floor.
func mssqlSnapshot(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var b strings.Builder
	var tables []string
	rows, err := raw.Query(`SELECT name FROM sys.tables ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		var c int
		raw.QueryRow(`SELECT COUNT(*) FROM [` + n + `]`).Scan(&c)
		fmt.Fprintf(&b, "%s %d\n", n, c)
	}
	for _, q := range []string{
		`SELECT CONCAT(OBJECT_NAME(object_id), '.', name, ' ', TYPE_NAME(user_type_id), ' ', max_length, ' ', collation_name, ' ', is_nullable, ' ', OBJECT_DEFINITION(default_object_id)) FROM sys.columns WHERE OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(parent_object_id), ' ', name, ' ', type_desc, ' ', OBJECT_DEFINITION(object_id)) FROM sys.objects WHERE parent_object_id <> 0 ORDER BY 1`,
		`SELECT CONCAT(name, ' ', delete_referential_action_desc) FROM sys.foreign_keys ORDER BY 1`,
		`SELECT CONCAT(OBJECT_NAME(object_id), ' ', name, ' ', is_unique) FROM sys.indexes WHERE name IS NOT NULL AND OBJECTPROPERTY(object_id, 'IsUserTable') = 1 ORDER BY 1`,
		`SELECT CONCAT(FollowerId, ' ', FolloweeId, ' ', CONVERT(nvarchar(27), CreatedAt, 121)) FROM Follows ORDER BY FollowerId, FolloweeId`,
		`SELECT CONCAT(Id, ' ', Name) FROM Users ORDER BY Id`,
	} {
		writeLines(&b, raw, q)
	}
	return b.String()
}
