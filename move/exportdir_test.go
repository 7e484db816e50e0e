package move_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"follows/graphcsv"
	"follows/move"
)

// Export writes through no link and into no folder that holds anything:
// a users.csv planted in the destination as a link to another file (a
// victim the export would fill with every account's stamp) and an
// earlier, world-readable follows.csv are refused, with why, and left as
// they were, the victim unchanged; nothing else appears beside the
// destination.
func TestExportWritesThroughNoLink(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.db")
	if err := importDir(t, src, writeFolder(t, fullGraph)); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	const victimText = "the victim's own text\n"
	if err := os.WriteFile(victim, []byte(victimText), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dest := filepath.Join(parent, "graph")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dest, graphcsv.UsersFile)); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dest, graphcsv.FollowsFile), []byte("an earlier export's\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	err := move.Export(t.Context(), src, dest, &out)
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("export into a folder holding a link and an earlier file: %v, want it refused as not empty", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != victimText {
		t.Errorf("export wrote through the link: the victim file holds\n%s", b)
	}
	if fi, err := os.Lstat(filepath.Join(dest, graphcsv.UsersFile)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link is not as it was: %v, %v", fi, err)
	}
	fi, err := os.Stat(filepath.Join(dest, graphcsv.FollowsFile))
	if b, _ := os.ReadFile(filepath.Join(dest, graphcsv.FollowsFile)); err != nil || string(b) != "an earlier export's\n" || fi.Mode().Perm() != 0o644 {
		t.Errorf("the earlier follows.csv was changed: %q, %v", b, fi.Mode())
	}
	if names := folderNames(t, parent); names != "graph" {
		t.Errorf("beside the destination: %s; want only the destination", names)
	}
}

// Export's folder is its own: made owner-only (0700) with its files
// owner-only (0600), whatever mode an empty folder given to it had, and
// whether or not its parents existed; nothing but the folder is left
// beside it.
func TestExportWritesAPrivateFolder(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.db")
	if err := importDir(t, src, writeFolder(t, fullGraph)); err != nil {
		t.Fatal(err)
	}
	emptyParent := t.TempDir()
	empty := filepath.Join(emptyParent, "graph")
	if err := os.Mkdir(empty, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(empty, 0o777) // whatever the umask took off
	newParent := filepath.Join(t.TempDir(), "a", "b")
	for what, dest := range map[string]string{"an empty folder": empty, "a new path": filepath.Join(newParent, "graph")} {
		var out strings.Builder
		if err := move.Export(t.Context(), src, dest, &out); err != nil {
			t.Errorf("export into %s: %v", what, err)
			continue
		}
		sameFiles(t, "exported into "+what, readFolder(t, dest), fullGraph)
		if fi, err := os.Lstat(dest); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("export into %s made %v, %v; want a folder, mode 0700", what, fi.Mode(), err)
		}
		for name := range fullGraph {
			if fi, err := os.Lstat(filepath.Join(dest, name)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Errorf("export into %s wrote %s as %v, %v; want a file, mode 0600", what, name, fi.Mode(), err)
			}
		}
		if names := folderNames(t, filepath.Dir(dest)); names != "graph" {
			t.Errorf("export into %s left beside it: %s; want only its folder", what, names)
		}
	}
}

// folderNames lists the names in a folder, space-separated.
func folderNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}
