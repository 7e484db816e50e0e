package main

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"follows/db"
)

// -demo loads the sample graph into an empty database, and says so; on a
// database that has users it loads nothing, and says that too, and why.
func TestDemoSaysWhatItDid(t *testing.T) {
	store, err := db.Open(t.Context(), filepath.Join(t.TempDir(), "follows.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	if err := loadDemo(t.Context(), store, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "loaded the sample graph") {
		t.Errorf("first -demo logged %q", out.String())
	}
	out.Reset()
	if err := loadDemo(t.Context(), store, log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sample graph not loaded") || !strings.Contains(out.String(), "already has users") {
		t.Errorf("-demo on a database with users logged %q", out.String())
	}
}
