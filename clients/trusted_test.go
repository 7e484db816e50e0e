package clients_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"follows/api"
	"follows/api/apitest"
)

// The manifests the client tools write, as a build would: relay-compiler
// with persistConfig (relay.persisted.json: a local file of MD5 id to
// text) and Apollo's generate-persisted-query-manifest
// (persisted-query-manifest.config.json), over the operations relay.mjs
// and apollo.mjs run.
func clientManifests(t *testing.T) (relay, apollo string) {
	t.Helper()
	relay = filepath.Join("generated", "relay-persisted.json")
	apollo = filepath.Join("generated", "persisted-query-manifest.json")
	os.RemoveAll(filepath.Join("generated", "relay"))
	if err := os.MkdirAll(filepath.Join("generated", "relay"), 0o755); err != nil {
		t.Fatal(err)
	}
	// relay-compiler adds to the file it persists to, which must exist.
	if err := os.WriteFile(relay, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(apollo)
	for _, args := range [][]string{
		{"npx", "--no-install", "relay-compiler", "relay.persisted.json"},
		{"npx", "--no-install", "generate-persisted-query-manifest"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return relay, apollo
}

// trustedOnly serves the manifests under -trusted-only over a graph made
// for relay.mjs or apollo.mjs (followedStar) by a server of the same
// database that runs any document; it returns the server and the graph.
func trustedOnly(t *testing.T, manifests ...string) (*apitest.Server, string) {
	t.Helper()
	open := apitest.Start(t)
	graph := followedStar(open)
	docs, err := api.OpenTrustedDocuments(manifests)
	if err != nil {
		t.Fatal(err)
	}
	return apitest.StartOn(t, open.DSN, func(c *api.Config) { c.Trusted, c.TrustedOnly = docs, true }), graph
}

// Relay and Apollo Client, with the manifests their tools wrote, against a
// server that runs only those: each app's operations work, sent by id
// alone (Relay's doc_id, Apollo's SHA-256 hash), while a query of
// another's is refused with TRUSTED_DOCUMENT_REQUIRED and an id the
// manifests lack with PERSISTED_QUERY_NOT_FOUND.
func TestTrustedDocumentsFromClients(t *testing.T) {
	nodeTools(t, "relay-compiler", "relay-runtime", "@apollo/client", "@apollo/generate-persisted-query-manifest")
	relay, apollo := clientManifests(t)

	s, graph := trustedOnly(t, relay, apollo)
	runNode(t, "relay.mjs", s.URL+"/graphql", graph, "persisted")
	s, graph = trustedOnly(t, relay, apollo)
	runNode(t, "apollo.mjs", s.URL+"/graphql", graph, "persisted")

	for _, tc := range []struct{ body, code string }{
		{`{"query": "{ users(first: 100) { edges { node { name } } } }"}`, api.CodeTrustedDocumentRequired},
		{`{"doc_id": "00000000000000000000000000000000"}`, api.CodePersistedQueryNotFound},
		{`{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "` + strings.Repeat("ab", 32) + `"}}}`, api.CodePersistedQueryNotFound},
	} {
		r := s.Raw("POST", "/graphql", "application/json", []byte(tc.body), map[string]string{"Accept": "application/graphql-response+json"})
		if r.Status != 400 || r.Parsed.Code() != tc.code {
			t.Errorf("%s: status %d, want 400 with %s: %s", tc.body, r.Status, tc.code, r.Body)
		}
		var body map[string]json.RawMessage
		if json.Unmarshal(r.Body, &body) == nil && body["data"] != nil {
			t.Errorf("%s: a refusal with data: %s", tc.body, r.Body)
		}
	}
}
