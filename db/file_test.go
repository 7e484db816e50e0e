package db

import "testing"

func TestEmbeddedFile(t *testing.T) {
	for _, tc := range []struct {
		dsn, path string
		embedded  bool
	}{
		{"follows.db", "follows.db", true},
		{"/var/lib/follows/x.db?_pragma=foo(1)", "/var/lib/follows/x.db", true},
		{"file:data/x.db?cache=shared", "data/x.db", true},
		{"file:///abs/x.db", "/abs/x.db", true},
		{":memory:", "", true},
		{"file:x?mode=memory&cache=shared", "", true},
		{"postgres://u:p@h/db", "", false},
		{"postgresql://u:p@h/db", "", false},
		{"sqlserver://sa:p@h:1433?database=x", "", false},
	} {
		path, embedded := EmbeddedFile(tc.dsn)
		if path != tc.path || embedded != tc.embedded {
			t.Errorf("EmbeddedFile(%q) = %q, %v; want %q, %v", tc.dsn, path, embedded, tc.path, tc.embedded)
		}
	}
}
