package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// The issuer, audience and key set go together: a server given some but
// not all stops at start, as does one whose key set file is not there.
func TestOIDCFlagsGoTogether(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-oidc-issuer", "https://id.example/"}, "all three"},
		{[]string{"-oidc-audience", "app", "-oidc-jwks", "https://id.example/jwks"}, "all three"},
		{[]string{"-oidc-issuer", "https://id.example/", "-oidc-audience", "app", "-oidc-jwks", filepath.Join(t.TempDir(), "none.json")}, "JWKS file"},
	} {
		err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0", "-db", dsn}, tc.args...), io.Discard, io.Discard, noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
}
