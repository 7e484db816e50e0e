package adopt

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No SQL Server runs where the server is developed: these tests pin the
// T-SQL that makes adopting the article's own database right, by the
// rules SQL Server documents (see sqlserver_name.go); the live tests in
// sqlserver_test.go run it when MSSQL_DSN names a server.

// SQL Server's adoption finds shared names in the collation the index
// will compare them in, not by lower() in the column's collation.
func TestSQLServerNameKey(t *testing.T) {
	d := SQLServer()
	if got, want := d.NameKey("u.Name"), "u.Name COLLATE Latin1_General_100_CI_AS"; got != want {
		t.Errorf("NameKey = %q, want %q", got, want)
	}
	for _, d := range []Dialect{SQLite(), Postgres()} {
		if got := d.NameKey("Name"); got != "lower(Name)" {
			t.Errorf("%T.NameKey = %q, want lower(Name) as its IX_Users_Name", d, got)
		}
	}
}

// SQL Server's adoption keeps to SQL Server 2016 (compatibility level
// 130), the server's floor: no statement it or its tests send uses
// STRING_AGG or CONCAT_WS (both SQL Server 2017). Every string literal of
// the package's code, the SQL Server tests and the fixtures is read.
func TestSQLServerAdoptionIs2016(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool {
		return strings.HasSuffix(f, "_test.go") && f != "sqlserver_test.go"
	})
	files = append(files, "eftest/eftest.go")
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, fn := range []string{"STRING_AGG", "CONCAT_WS"} {
				if strings.Contains(strings.ToUpper(s), fn) {
					t.Errorf("%s: %s (SQL Server 2017) in %.80q", fset.Position(lit.Pos()), fn, s)
				}
			}
			return true
		})
	}
}
