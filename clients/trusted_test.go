package clients_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// GraphQL Code Generator's client preset (codegen.persisted.ts) writes
// persisted-documents.json and, in the typed documents the app imports,
// each one's hash, which its client sends: every hash is a manifest id,
// and the operations run by it (as documentId, and as Apollo's hash)
// against a server that runs only those.
func TestTrustedDocumentsFromCodegen(t *testing.T) {
	nodeTools(t, "@graphql-codegen/cli", "@graphql-codegen/client-preset")
	dir := filepath.Join("generated", "gql")
	os.RemoveAll(dir)
	if out, err := exec.Command("npx", "--no-install", "graphql-codegen", "--config", "codegen.persisted.ts").CombinedOutput(); err != nil {
		t.Fatalf("graphql-codegen: %v\n%s", err, out)
	}
	manifest := filepath.Join(dir, "persisted-documents.json")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var docs map[string]string
	if err := json.Unmarshal(b, &docs); err != nil {
		t.Fatal(err)
	}
	typed, err := os.ReadFile(filepath.Join(dir, "graphql.ts"))
	if err != nil {
		t.Fatal(err)
	}
	hashes := regexp.MustCompile(`"__meta__":\{"hash":"([^"]+)"\}`).FindAllStringSubmatch(string(typed), -1)
	if len(hashes) != len(docs) || len(docs) == 0 {
		t.Fatalf("%d hashes in the typed documents, %d documents in the manifest", len(hashes), len(docs))
	}
	for _, h := range hashes {
		if _, ok := docs[h[1]]; !ok {
			t.Errorf("the client would send %s, which the manifest lacks", h[1])
		}
	}

	open := apitest.Start(t)
	open.Sample()
	trusted, err := api.OpenTrustedDocuments([]string{manifest})
	if err != nil {
		t.Fatal(err)
	}
	s := apitest.StartOn(t, open.DSN, func(c *api.Config) { c.Trusted, c.TrustedOnly = trusted, true })
	profile := ""
	for id, text := range docs {
		if strings.HasPrefix(text, "query Profile(") {
			profile = id
		}
	}
	for _, body := range []string{
		`{"documentId": "` + profile + `", "variables": {"name": "alice"}}`,
		`{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "` + profile + `"}}, "variables": {"name": "alice"}}`,
	} {
		r := s.Raw("POST", "/graphql", "application/json", []byte(body), nil)
		if r.Status != 200 || len(r.Parsed.Errors) > 0 || !strings.Contains(string(r.Parsed.Data), `"name":"alice"`) {
			t.Errorf("%s: status %d: %s", body, r.Status, r.Body)
		}
	}
	if r := s.Raw("POST", "/graphql", "application/json", []byte(`{"query": "{ users { totalCount } }"}`), nil); r.Parsed.Code() != api.CodeTrustedDocumentRequired {
		t.Errorf("a query not in the manifest: %s", r.Body)
	}
}
