package adopt

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The no-self-follow CHECK is known by what it says, however a catalogue
// prints it: SQLite's text as written, PostgreSQL's pg_get_constraintdef,
// SQL Server's sys.check_constraints.definition.
func TestIsNoSelfFollow(t *testing.T) {
	for expr, want := range map[string]bool{
		`FollowerId <> FolloweeId`:               true,
		`"FolloweeId" != "FollowerId"`:           true,
		`CHECK (("FollowerId" <> "FolloweeId"))`: true,
		`([FollowerId]<>[FolloweeId])`:           true,
		`"FollowerId" > 0`:                       false,
		`FollowerId <> FolloweeId OR 1 = 1`:      false,
		`FollowerId = FolloweeId`:                false,
	} {
		if got := isNoSelfFollow(expr); got != want {
			t.Errorf("isNoSelfFollow(%q) = %v, want %v", expr, got, want)
		}
	}
}

// SQLite keeps CHECKs only in the CREATE TABLE text: each is found with
// its name, and none inside a literal or a quoted name.
func TestSQLiteChecks(t *testing.T) {
	got := sqliteChecks(`CREATE TABLE "Follows" ("A" INTEGER CHECK (A > (0)), "check (x)" TEXT DEFAULT 'CHECK (1)',
    CONSTRAINT "CK_Follows_NoSelfFollow" CHECK ("FollowerId" <> FolloweeId), constraint [CK_b] check(length(')') = 1))`)
	want := []checkDef{{"", "A > (0)"}, {"CK_Follows_NoSelfFollow", `"FollowerId" <> FolloweeId`}, {"CK_b", "length(')') = 1"}}
	if !slices.Equal(got, want) {
		t.Errorf("sqliteChecks = %q, want %q", got, want)
	}
}

// Adoption skips only what each migration adds one at a time: every
// dialect's migrations add one column a statement.
func TestMigrationsAddOneColumnAStatement(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres", "sqlserver"} {
		files, err := migrationFiles(os.DirFS("../migrations/" + d))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range files {
			for _, stmt := range Statements(m.src) {
				sub := addColumnRE.FindStringSubmatch(withoutComments(stmt))
				if sub != nil && strings.Contains(stripParens(sub[3]), ",") {
					t.Errorf("%s/%s adds more than one column in one statement:\n%s", d, m.name, stmt)
				}
			}
		}
	}
}

// stripParens drops what stands in parentheses.
func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0:
			b.WriteRune(c)
		}
	}
	return b.String()
}
