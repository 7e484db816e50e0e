package trusted_test

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/trusted"
	"follows/graph"
)

const (
	viewerText = "query Viewer { viewer { id name } }"
	usersText  = "query Users { users(first: 2) { totalCount } }"
)

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// write puts content in a file of its own and returns its path.
func write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each client's manifest loads, told apart by its shape, and serves its
// documents by the ids the manifest gives, with the names metrics use.
func TestLoadsEachShape(t *testing.T) {
	relay := write(t, "relay.json", `{
  "`+md5Hex(viewerText)+`": "`+viewerText+`"
}`)
	codegen := write(t, "persisted-documents.json", `{"`+sha256Hex(usersText)+`": "`+usersText+`"}`)
	apollo := write(t, "apollo.json", `{
  "format": "apollo-persisted-query-manifest",
  "version": 1,
  "operations": [
    {"id": "`+sha256Hex(usersText)+`", "name": "UsersPage", "type": "query", "body": "`+usersText+`"},
    {"id": "custom-id", "name": "Me", "type": "query", "body": "`+viewerText+`"}
  ]
}`)
	set, err := trusted.Load(graph.Schema(), []string{relay, codegen, apollo})
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 3 {
		t.Errorf("%d documents, want 3 (the Apollo manifest repeats the codegen one's id and text)", set.Len())
	}
	for id, want := range map[string]string{
		md5Hex(viewerText):               "Viewer",
		sha256Hex(usersText):             "Users", // the first file that lists it names it
		"sha256:" + sha256Hex(usersText): "Users",
		"custom-id":                      "Me",
	} {
		d := set.ByID(id)
		if d == nil {
			t.Errorf("no document with id %q", id)
			continue
		}
		if d.Name != want {
			t.Errorf("id %q: name %q, want %q", id, d.Name, want)
		}
	}
	if d := set.ByText(viewerText); d == nil || d.Text != viewerText {
		t.Errorf("ByText(%q) = %v", viewerText, d)
	}
	if set.ByID("nope") != nil || set.ByText("{ viewer { id } }") != nil {
		t.Error("found a document not listed")
	}
}

// A bad manifest is refused, the error naming the file and the line or
// the entry at fault.
func TestRefusesBadManifests(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string // in the error
	}{
		{"not JSON", "{\n  \"a\": \"{ viewer { id } }\",\n  oops\n}", []string{"line 3"}},
		{"a JSON array", "[\n  \"{ viewer { id } }\"\n]", []string{"line 1", "JSON object"}},
		{"a value that is not a text", `{"abc": {"text": "{ viewer { id } }"}}`, []string{`key "abc"`}},
		{"an empty text", `{"abc": ""}`, []string{`key "abc"`}},
		{"no documents", `{}`, []string{"no documents"}},
		{"a document that does not parse", `{"abc": "query { viewer { id }"}`, []string{`id "abc"`, "does not validate"}},
		{"a field the schema lacks", `{"abc": "query Q { viewer { nope } }"}`, []string{`id "abc"`, "nope"}},
		{"no operation", `{"abc": "fragment F on User { id }"}`, []string{`id "abc"`}},
		{"Apollo: an operation without a body", `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [
  {"id": "a", "name": "A", "type": "query", "body": "{ viewer { id } }"},
  {"id": "b", "name": "B", "type": "query"}]}`, []string{"operations[1]"}},
		{"Apollo: another version", `{"format": "apollo-persisted-query-manifest", "version": 2, "operations": []}`, []string{"version 2"}},
		{"Apollo: operations not a list", `{"format": "apollo-persisted-query-manifest", "version": 1,
 "operations": {"a": 1}}`, []string{"operations", "line 2"}},
		{"Apollo: an invalid body", `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [
  {"id": "x1", "name": "Broken", "type": "query", "body": "query Broken { nope }"}]}`, []string{`id "x1" (Broken)`}},
		{"a format without operations", `{"format": "apollo-persisted-query-manifest", "version": 1}`, []string{"operations"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, "manifest.json", tc.content)
			_, err := trusted.Load(graph.Schema(), []string{path})
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
	t.Run("an id two files give different texts", func(t *testing.T) {
		a := write(t, "a.json", `{"abc": "{ viewer { id } }"}`)
		b := write(t, "b.json", `{"abc": "{ viewer { name } }"}`)
		_, err := trusted.Load(graph.Schema(), []string{a, b})
		if err == nil || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), `"abc"`) {
			t.Errorf("error %v, want one naming both files and the id", err)
		}
	})
	t.Run("a file that is not there", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.json")
		if _, err := trusted.Load(graph.Schema(), []string{missing}); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("error %v, want one naming the file", err)
		}
	})
}

// A reload that fails keeps the set in force; one that loads replaces it.
func TestReloadKeepsTheSetOnError(t *testing.T) {
	path := write(t, "m.json", `{"a": "query A { viewer { id } }"}`)
	docs, err := trusted.Open(graph.Schema(), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	before := docs.Current()
	os.WriteFile(path, []byte(`{"a": "query A { viewer { nope } }"}`), 0o644)
	if _, err := docs.Reload(); err == nil {
		t.Fatal("a manifest that does not validate reloaded")
	}
	if docs.Current() != before || docs.Current().ByID("a") == nil {
		t.Fatal("a failed reload changed the set in force")
	}
	os.WriteFile(path, []byte(`{"b": "query B { viewer { name } }"}`), 0o644)
	if _, err := docs.Reload(); err != nil {
		t.Fatal(err)
	}
	if docs.Current().ByID("a") != nil || docs.Current().ByID("b") == nil {
		t.Error("the reload did not put the new set in force")
	}
}
