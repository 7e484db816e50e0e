package adopt_test

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"follows/db/adopt"
	"follows/db/adopt/eftest"
)

// recordingTx is a transaction on a real database that notes each
// statement adoption executes, as SQLite's store gives it (no rebinding).
type recordingTx struct {
	*sql.Tx
	ran *[]string
}

func (t recordingTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	*t.ran = append(*t.ran, q)
	return t.Tx.ExecContext(ctx, q, args...)
}
func (recordingTx) Rebind(q string) string   { return q }
func (recordingTx) TimeArg(tm time.Time) any { return tm.UTC().Format("2006-01-02 15:04:05.0000000") }

// fitWatcher is SQLite's adoption, noting in the same list when the
// dialect is asked to fit Users.Name, and what IX_Users_Name was then.
type fitWatcher struct {
	adopt.Dialect
	ran *[]string
}

const fitMark = "-- FitName"

func (w fitWatcher) FitName(ctx context.Context, tx adopt.Tx) ([]string, error) {
	*w.ran = append(*w.ran, fitMark)
	return w.Dialect.FitName(ctx, tx)
}

// Finding 1's order, which every dialect shares: Users.Name is fitted
// (SQL Server alters it there) after the rows are checked and before
// migration 1's CREATE UNIQUE INDEX IX_Users_Name is replayed, in both
// shapes, inside the adopting transaction.
func TestFitNameBeforeIXUsersName(t *testing.T) {
	for shape, ddl := range map[string]string{
		"convention":  eftest.SQLiteConvention + "\n" + eftest.UserUserRows(efFollows),
		"join-entity": eftest.SQLiteUsers + "\n" + fixtureDialect["sqlite"].Replace(fixtureFollows(fixtureKeys)) + "\n" + fixtureRows,
	} {
		t.Run(shape, func(t *testing.T) {
			tx := efSQLiteTx(t, ddl)
			var ran []string
			plan, err := adopt.Run(t.Context(), recordingTx{tx, &ran}, os.DirFS("../migrations/sqlite"), fitWatcher{adopt.SQLite(), &ran}, true)
			if err != nil {
				t.Fatalf("adopt: %v\n%s", err, plan)
			}
			fit := slices.Index(ran, fitMark)
			index := slices.IndexFunc(ran, func(q string) bool { return strings.Contains(q, `CREATE UNIQUE INDEX "IX_Users_Name"`) })
			if fit < 0 || index < 0 || fit > index {
				t.Errorf("FitName ran at %d, IX_Users_Name was made at %d, of:\n%s", fit, index, strings.Join(ran, "\n"))
			}
		})
	}
}

// timeRefuser is SQLite's adoption with a dialect's refusal of every
// CreatedAt column, as SQL Server's refuses a datetime one.
type timeRefuser struct{ adopt.Dialect }

func (timeRefuser) CreatedAtProblem(c adopt.Column) string {
	return "Follows." + c.Name + " is " + c.Type + ", refused"
}

// Finding 12's seam, which every dialect shares: what the dialect says of
// an adopted Follows.CreatedAt refuses the adoption, saying it, before
// anything is changed.
func TestCreatedAtProblemRefuses(t *testing.T) {
	tx := efSQLiteTx(t, eftest.SQLiteUsers+"\n"+fixtureDialect["sqlite"].Replace(fixtureFollows(fixtureKeys))+"\n"+fixtureRows)
	var ran []string
	_, err := adopt.Run(t.Context(), recordingTx{tx, &ran}, os.DirFS("../migrations/sqlite"), timeRefuser{adopt.SQLite()}, true)
	if err == nil || !strings.Contains(err.Error(), "Follows.CreatedAt is text, refused") {
		t.Errorf("adoption with CreatedAt refused by the dialect: %v", err)
	}
	if len(ran) > 0 {
		t.Errorf("the refused adoption ran %d statements, the first %.80q", len(ran), ran[0])
	}
}

// efSQLiteTx opens a transaction, rolled back when the test ends, on a
// new SQLite file an EF Core app left with ddl.
func efSQLiteTx(t *testing.T, ddl string) *sql.Tx {
	t.Helper()
	raw, err := sql.Open("sqlite", eftest.SQLite(t, ddl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	tx, err := raw.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}
