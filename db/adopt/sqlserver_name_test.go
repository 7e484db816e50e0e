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

// The article's Name (nvarchar(max), the database's default collation)
// is made nvarchar(450) in the case-insensitive collation, by exactly the
// statement migration 11 uses, after an index on Name alone is dropped
// (migration 1's IX_Users_Name replaces it); an index that uses Name with
// more is refused by name, and a right column is left alone.
func TestFitNameSteps(t *testing.T) {
	const alter = `ALTER TABLE [Users] ALTER COLUMN [Name] nvarchar(450) COLLATE Latin1_General_100_CI_AS NOT NULL`
	article := nameColumn{typ: "nvarchar", maxLength: -1, collation: "SQL_Latin1_General_CP1_CI_AS"}
	csIndexed := nameColumn{typ: "nvarchar", maxLength: 900, collation: "Latin1_General_100_CS_AS"}
	for _, tc := range []struct {
		name      string
		col       nameColumn
		users     []nameUser
		stmts     []string
		says      []string
		refusedAs []string
	}{{
		name:  "the article's nvarchar(max)",
		col:   article,
		stmts: []string{alter},
		says:  []string{"make Users.Name nvarchar(450) COLLATE Latin1_General_100_CI_AS NOT NULL (it is nvarchar(max) COLLATE SQL_Latin1_General_CP1_CI_AS NOT NULL), before migration 1 creates IX_Users_Name"},
	}, {
		name:  "an app's unique index on Name in a case-sensitive collation",
		col:   csIndexed,
		users: []nameUser{{name: "IX_Users_Name", kind: "NONCLUSTERED", columns: 1}},
		stmts: []string{`DROP INDEX [IX_Users_Name] ON [Users]`, alter},
		says:  []string{"drop the index IX_Users_Name on Users (Name)", "(it is nvarchar(450) COLLATE Latin1_General_100_CS_AS NOT NULL)"},
	}, {
		name:  "an index named with a ]",
		col:   csIndexed,
		users: []nameUser{{name: "by]name", kind: "NONCLUSTERED", columns: 1}},
		stmts: []string{`DROP INDEX [by]]name] ON [Users]`, alter},
	}, {
		name:  "a nullable Name (no nullable reference types)",
		col:   nameColumn{typ: "nvarchar", maxLength: 900, collation: nameCollation, nullable: true},
		stmts: []string{alter},
	}, {
		name:  "a varchar(100) Name",
		col:   nameColumn{typ: "varchar", maxLength: 100, collation: "SQL_Latin1_General_CP1_CI_AS"},
		stmts: []string{alter},
		says:  []string{"(it is varchar(100) COLLATE"},
	}, {
		name:  "statistics the optimizer made on Name, as an app that looked users up by name has",
		col:   article,
		users: []nameUser{{name: "_WA_Sys_00000002_4AB81AF0", kind: autoStatistics}},
		stmts: []string{`DROP STATISTICS [Users].[_WA_Sys_00000002_4AB81AF0]`, alter},
		says:  []string{"drop the statistics _WA_Sys_00000002_4AB81AF0 SQL Server made itself"},
	}, {
		name: "already right",
		col:  nameColumn{typ: "nvarchar", maxLength: 900, collation: nameCollation},
	}, {
		name: "an index with Name and more, and statistics",
		col:  article,
		users: []nameUser{{name: "IX_Users_Name_Id", kind: "NONCLUSTERED", columns: 2}, {name: "ST_Name", kind: "STATISTICS"},
			{name: "UQ_Name", kind: "NONCLUSTERED", constraint: true, columns: 1}, {name: "IX_Filtered", kind: "NONCLUSTERED", filtered: true, columns: 1}},
		refusedAs: []string{"the nonclustered IX_Users_Name_Id on Users uses Name", "the statistics ST_Name on Users uses Name", "UQ_Name", "IX_Filtered"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			steps, refused := fitNameSteps(tc.col, tc.users)
			var stmts []string
			var says string
			for _, st := range steps {
				stmts = append(stmts, st.Stmt)
				says += st.Says + "\n"
			}
			if !slices.Equal(stmts, tc.stmts) {
				t.Errorf("statements %q, want %q", stmts, tc.stmts)
			}
			for _, want := range tc.says {
				if !strings.Contains(says, want) {
					t.Errorf("the plan does not say %q:\n%s", want, says)
				}
			}
			if len(refused) != len(tc.refusedAs) {
				t.Fatalf("refused %q, want %d problems", refused, len(tc.refusedAs))
			}
			for i, want := range tc.refusedAs {
				if !strings.Contains(refused[i], want) {
					t.Errorf("refusal %q does not say %q", refused[i], want)
				}
			}
		})
	}
}

// Before the column is altered and IX_Users_Name made, SQL Server's
// adoption lists the names too long for nvarchar(450), counted in bytes
// as the type counts them, and finds shared names in the collation the
// index will compare them in, not by lower() in the column's collation.
func TestSQLServerNameChecks(t *testing.T) {
	d := SQLServer()
	if got, want := d.NameKey("u.Name"), "u.Name COLLATE Latin1_General_100_CI_AS"; got != want {
		t.Errorf("NameKey = %q, want %q", got, want)
	}
	var long string
	for _, q := range d.NameChecks() {
		long += q
	}
	for _, want := range []string{"DATALENGTH(CAST(Name AS nvarchar(max))) > 900", "TOP (20)", "ORDER BY Id", "CONCAT(Id, ' ', LEFT(Name, 40)"} {
		if !strings.Contains(long, want) {
			t.Errorf("the long-name check does not say %q:\n%s", want, long)
		}
	}
	for _, d := range []Dialect{SQLite(), Postgres()} {
		if got := d.NameKey("Name"); got != "lower(Name)" {
			t.Errorf("%T.NameKey = %q, want lower(Name) as its IX_Users_Name", d, got)
		}
	}
}

// A Follows.CreatedAt that is not datetime2 is refused on SQL Server,
// saying why and the statement that fixes it; datetime2 of any scale is
// taken.
func TestSQLServerCreatedAtType(t *testing.T) {
	d := SQLServer()
	if why := d.CreatedAtProblem(Column{Name: "CreatedAt", Type: "datetime2", NotNull: true}); why != "" {
		t.Errorf("datetime2 refused: %s", why)
	}
	for typ, because := range map[string]string{
		"datetime":       "1/300 of a second",
		"smalldatetime":  "whole minutes",
		"datetimeoffset": "UTC datetime2",
		"nvarchar":       "UTC datetime2",
	} {
		why := d.CreatedAtProblem(Column{Name: "CreatedAt", Type: typ, NotNull: true})
		for _, want := range []string{"Follows.CreatedAt is " + typ + ", not datetime2", because, "skip or repeat",
			"ALTER TABLE [Follows] ALTER COLUMN [CreatedAt] datetime2(7) NOT NULL"} {
			if !strings.Contains(why, want) {
				t.Errorf("%s: the refusal does not say %q: %q", typ, want, why)
			}
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
