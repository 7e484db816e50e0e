package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// gen -out makes the folder it is given, as a user expects of an output
// folder, rather than failing until someone creates it.
func TestGenCreatesOutputFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graphs", "tiny")
	if err := runGen([]string{"-users", "50", "-out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"users.csv", "follows.csv"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
