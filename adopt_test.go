package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/db/adopt/eftest"
)

// Adoption's behaviour is tested in db/adopt, on SQLite files and
// PostgreSQL; this is the test of the migrate subcommand on an EF Core
// database.

// migrate -dry-run prints the plan and changes nothing; migrate refuses a
// database it cannot adopt, naming the rows, and leaves the file as it
// was; then, the row put right, it adopts it and says what it did.
func TestMigrateAdoptsAnEFCoreDatabase(t *testing.T) {
	path := eftest.SQLite(t, eftest.SQLiteConvention+"\n"+eftest.UserUserRows(append(slices.Clone(eftest.Follows), [2]int{3, 3})))
	before, _ := os.ReadFile(path)

	var out strings.Builder
	if err := run(t.Context(), []string{"migrate", "-dry-run", "-db", path}, &out, &out, noEnv); err == nil || !strings.Contains(err.Error(), "3 -> 3") {
		t.Fatalf("migrate -dry-run on a self-follow: %v, want it refused naming 3 -> 3\n%s", err, &out)
	}
	if err := run(t.Context(), []string{"migrate", "-db", path}, &out, &out, noEnv); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("migrate on a self-follow: %v, want it refused", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused adoption changed the file")
	}
	if _, err := apitest.OpenRaw(t, path).Exec(`DELETE FROM "UserUser" WHERE "FollowersId" = "FollowingId"`); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if err := run(t.Context(), []string{"migrate", "-dry-run", "-db", path}, &out, &out, noEnv); err != nil {
		t.Fatalf("migrate -dry-run: %v\n%s", err, &out)
	}
	for _, want := range []string{"database shape: convention", "FollowerId = FollowersId", "dry run: rolled back, nothing was changed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run does not say %q:\n%s", want, &out)
		}
	}
	if apitest.TableCount(t, path, "UserUser") != len(eftest.Follows) || apitest.TableCount(t, path, "Follows") != -1 {
		t.Fatal("the dry run changed the database")
	}
	out.Reset()
	if err := run(t.Context(), []string{"migrate", "-db", path}, &out, &out, noEnv); err != nil {
		t.Fatalf("migrate: %v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "database shape: convention") || !strings.Contains(out.String(), "migrations applied") {
		t.Errorf("migrate says:\n%s", &out)
	}
	if apitest.TableCount(t, path, "UserUser") != -1 || apitest.TableCount(t, path, "Follows") != len(eftest.Follows) {
		t.Error("after migrate UserUser should be gone and its rows in Follows")
	}
	apitest.CheckGraph(t, path)
}
