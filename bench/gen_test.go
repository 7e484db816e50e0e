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

// A graph ten times larger keeps the shape: the most followed account is
// followed by the same share of users at ten times the users, as xlarge
// must be to large. With the reference's exponent kept, the share drops
// (from about 30% to 21% between large and xlarge), and a page as deep
// as a quarter of the users would not exist.
func TestGenTenTimesLargerKeepsTheShape(t *testing.T) {
	const refN, refS = 1_000, popularityExponent
	ref, err := generateWith(refN, refS, 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	big, err := generateWith(10*refN, exponentFor(10*refN, refN, refS), 1, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	refShare := float64(ref.topFollowers) / refN
	bigShare := float64(big.topFollowers) / (10 * refN)
	if d := bigShare - refShare; d < -0.05 || d > 0.05 {
		t.Errorf("the most followed account has %.1f%% of users as followers at %d users and %.1f%% at %d: the shape changed",
			100*refShare, refN, 100*bigShare, 10*refN)
	}
	if d := ref.medianOut - big.medianOut; d < -2 || d > 2 {
		t.Errorf("median out-degree %d at %d users, %d at %d", ref.medianOut, refN, big.medianOut, 10*refN)
	}
	// Up to the reference size the exponent is the one it always was, so
	// small and large are the graphs they were.
	if s := exponentFor(referenceUsers, referenceUsers, popularityExponent); s != popularityExponent {
		t.Errorf("large's exponent is %v, not %v", s, popularityExponent)
	}
}
