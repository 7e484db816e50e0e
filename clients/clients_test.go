package clients_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
)

// nodeTools checks that clients/, the tests' working folder, has the npm
// packages a test needs (npm ci in clients/ installs them all).
// Without them these tests skip, saying so, except in CI, where .ci/run
// installs them and a skip would hide a broken set-up.
func nodeTools(t *testing.T, packages ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED under -short: the client tests run Node tools (the audit, codegen and tsc, Apollo, Relay) and are long; they run without -short")
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join("node_modules", p)); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("clients/node_modules/%s is missing; .ci/run runs npm ci in clients/", p)
			}
			t.Skipf("SKIPPED: %s is not installed: run `npm ci` in clients/ to run the client tests (the GraphQL-over-HTTP audit, codegen, Apollo Client, Relay); CI does", p)
		}
	}
}

// graphql-http's server audit: every MUST passes. SHOULDs that fail are
// listed in the test log (none at the time of writing).
func TestGraphQLOverHTTPAudit(t *testing.T) {
	nodeTools(t, "graphql-http")
	s := apitest.Start(t)
	s.Sample()
	cmd := exec.Command("node", "audit.mjs", s.URL+"/graphql")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	sc := bufio.NewScanner(bytes.NewReader(out))
	audits := 0
	for sc.Scan() {
		var r struct{ ID, Name, Status, Reason string }
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		audits++
		if r.Status != "ok" {
			if strings.HasPrefix(r.Name, "MUST") {
				t.Errorf("%s %s: %s", r.ID, r.Name, r.Reason)
			} else {
				t.Logf("%s (%s) %s: %s", r.Status, r.ID, r.Name, r.Reason)
			}
		}
	}
	if err != nil && !t.Failed() {
		t.Fatalf("audit: %v\n%s", err, stderr.String())
	}
	if audits < 30 {
		t.Fatalf("only %d audits ran:\n%s\n%s", audits, out, stderr.String())
	}
}

// GraphQL Code Generator reads the running server's introspection and the
// generated TypeScript types compile against code that uses them.
func TestClientCodegen(t *testing.T) {
	nodeTools(t, "@graphql-codegen/cli", "typescript")
	s := apitest.Start(t)
	os.RemoveAll("generated")
	for _, args := range [][]string{
		{"npx", "--no-install", "graphql-codegen", "--config", "codegen.ts"},
		{"npx", "--no-install", "tsc", "-p", "."},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "SCHEMA_URL="+s.URL+"/graphql")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	generated, err := os.ReadFile(filepath.Join("generated", "graphql.ts"))
	if err != nil || !bytes.Contains(generated, []byte("export type ProfileQuery")) {
		t.Errorf("generated types lack ProfileQuery: %v", err)
	}
}
