package api_test

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"follows/api"
	"follows/api/apitest"
	"follows/api/trusted"
)

// The documents of the trusted-document tests: a Relay-style manifest
// (id the MD5 of the text) and an Apollo one (id the SHA-256 of the body).
const (
	trustedViewer = "query TrustedViewer { viewer { id } users(first: 1) { totalCount } }"
	trustedUsers  = "query Users($n: Int) { users(first: $n) { totalCount } }"
)

var (
	relayID  = hexSum(md5.New(), trustedViewer)
	eventsID = hexSum(md5.New(), apitest.FollowEventsSubscription)
	apolloID = hexSum(sha256.New(), trustedUsers)
)

func hexSum(h interface {
	Write([]byte) (int, error)
	Sum([]byte) []byte
}, s string) string {
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

// trustedManifests writes the two manifests and loads them.
func trustedManifests(t *testing.T) *trusted.Documents {
	t.Helper()
	dir := t.TempDir()
	relay, _ := json.Marshal(map[string]string{relayID: trustedViewer, eventsID: apitest.FollowEventsSubscription})
	apollo, _ := json.Marshal(map[string]any{"format": "apollo-persisted-query-manifest", "version": 1, "operations": []any{
		map[string]string{"id": apolloID, "name": "UsersList", "type": "query", "body": trustedUsers},
	}})
	paths := []string{filepath.Join(dir, "relay.json"), filepath.Join(dir, "apollo.json")}
	os.WriteFile(paths[0], relay, 0o644)
	os.WriteFile(paths[1], apollo, 0o644)
	docs, err := api.OpenTrustedDocuments(paths)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// trustedOnlyServer serves docs under -trusted-only, over the sample
// graph that open, a server of the same database that runs any document,
// made.
func trustedOnlyServer(t *testing.T, docs *trusted.Documents) (s, open *apitest.Server) {
	open = apitest.Start(t)
	open.Sample()
	return apitest.StartOn(t, open.DSN, func(c *api.Config) { c.Trusted, c.TrustedOnly = docs, true }), open
}

func apqExtensions(hash string) map[string]any {
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}
}

// postJSON sends body, marshalled, with the Accept header given ("" for
// none).
func postJSON(s *apitest.Server, accept string, body map[string]any) apitest.RawResponse {
	b, _ := json.Marshal(body)
	h := map[string]string{}
	if accept != "" {
		h["Accept"] = accept
	}
	return s.Raw("POST", "/graphql", "application/json", b, h)
}

// Under -trusted-only the documents of the manifests run by the ids each
// client sends (Relay's doc_id or id, documentId, Apollo's hash; POST and
// GET) or by their exact text; any other document, introspection
// included, is refused with TRUSTED_DOCUMENT_REQUIRED and an unknown id
// with PERSISTED_QUERY_NOT_FOUND: 400 under
// application/graphql-response+json, 200 under application/json, as the
// server answers a document that does not parse.
func TestTrustedOnly(t *testing.T) {
	t.Parallel()
	s, open := trustedOnlyServer(t, trustedManifests(t))
	users := map[string]any{"n": 2}
	runs := []struct {
		name string
		send func() apitest.RawResponse
	}{
		{"Relay's doc_id", func() apitest.RawResponse { return postJSON(s, "", map[string]any{"doc_id": relayID}) }},
		{"id", func() apitest.RawResponse { return postJSON(s, "", map[string]any{"id": relayID}) }},
		{"documentId", func() apitest.RawResponse { return postJSON(s, "", map[string]any{"documentId": "md5:" + relayID}) }},
		{"Apollo's hash", func() apitest.RawResponse {
			return postJSON(s, "", map[string]any{"extensions": apqExtensions(apolloID), "variables": users})
		}},
		{"Apollo's hash with the body, as its retry sends", func() apitest.RawResponse {
			return postJSON(s, "", map[string]any{"query": trustedUsers, "extensions": apqExtensions(apolloID), "variables": users})
		}},
		{"a hash the manifest lacks with a trusted text, as Apollo's retry sends", func() apitest.RawResponse {
			return postJSON(s, "", map[string]any{"query": trustedViewer, "extensions": apqExtensions(hexSum(sha256.New(), trustedViewer))})
		}},
		{"the exact text", func() apitest.RawResponse { return postJSON(s, "", map[string]any{"query": trustedViewer}) }},
		{"GET with doc_id", func() apitest.RawResponse {
			return s.Raw("GET", "/graphql?"+url.Values{"doc_id": {relayID}}.Encode(), "", nil, nil)
		}},
		{"GET with Apollo's hash", func() apitest.RawResponse {
			ext, _ := json.Marshal(apqExtensions(apolloID))
			return s.Raw("GET", "/graphql?"+url.Values{"extensions": {string(ext)}, "variables": {`{"n": 2}`}}.Encode(), "", nil, nil)
		}},
	}
	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.send()
			if r.Status != 200 || len(r.Parsed.Errors) > 0 || !strings.Contains(string(r.Parsed.Data), "totalCount") {
				t.Errorf("status %d: %s", r.Status, r.Body)
			}
		})
	}

	refusals := []struct {
		name string
		body map[string]any
		code string
	}{
		{"a query not trusted", map[string]any{"query": "{ users(first: 100) { totalCount } }"}, api.CodeTrustedDocumentRequired},
		{"introspection", map[string]any{"query": "{ __schema { types { name } } }"}, api.CodeTrustedDocumentRequired},
		{"a trusted text changed", map[string]any{"query": trustedViewer + " "}, api.CodeTrustedDocumentRequired},
		{"an id with another text", map[string]any{"doc_id": relayID, "query": "{ users { totalCount } }"}, api.CodeTrustedDocumentRequired},
		{"an unknown doc_id", map[string]any{"doc_id": strings.Repeat("0", 32)}, api.CodePersistedQueryNotFound},
		{"an unknown hash", map[string]any{"extensions": apqExtensions(strings.Repeat("ab", 32))}, api.CodePersistedQueryNotFound},
		{"an unknown hash with its text, which would register it", map[string]any{"query": "{ viewer { id } }", "extensions": apqExtensions(hexSum(sha256.New(), "{ viewer { id } }"))}, api.CodeTrustedDocumentRequired},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			for accept, status := range map[string]int{"": 200, "application/json": 200, "application/graphql-response+json": 400} {
				r := postJSON(s, accept, tc.body)
				if r.Status != status || r.Parsed.Code() != tc.code {
					t.Errorf("Accept %q: status %d, want %d with %s: %s", accept, r.Status, status, tc.code, r.Body)
				}
				if strings.Contains(string(r.Body), `"data"`) {
					t.Errorf("Accept %q: a refusal with data: %s", accept, r.Body)
				}
			}
		})
	}
	t.Run("GET with a query not trusted", func(t *testing.T) {
		r := s.Raw("GET", "/graphql?"+url.Values{"query": {"{ users { totalCount } }"}}.Encode(), "", nil, nil)
		if r.Parsed.Code() != api.CodeTrustedDocumentRequired {
			t.Errorf("status %d: %s", r.Status, r.Body)
		}
	})

	t.Run("metrics label the manifest's names", func(t *testing.T) {
		r := s.Raw("GET", "/metrics", "", nil, nil)
		for _, label := range []string{`operation="UsersList"`, `operation="TrustedViewer"`, `code="TRUSTED_DOCUMENT_REQUIRED"`, `code="PERSISTED_QUERY_NOT_FOUND"`} {
			if !strings.Contains(string(r.Body), label) {
				t.Errorf("/metrics has no %s", label)
			}
		}
	})

	t.Run("a websocket", func(t *testing.T) {
		ws := s.Subscriber(open.CreateUser("socket").Token)
		var data struct{ Users struct{ TotalCount int } }
		a, err := operateWith(ws, "1", map[string]any{"extensions": apqExtensions(apolloID), "variables": users})
		dataOf(t, a, err, &data)
		if data.Users.TotalCount == 0 {
			t.Errorf("by the hash: %s", a)
		}
		a, err = operateWith(ws, "2", map[string]any{"query": "{ users { totalCount } }"})
		if err != nil || a.code() != api.CodeTrustedDocumentRequired {
			t.Errorf("a query not trusted: %v %s", err, a)
		}
		a, err = operateWith(ws, "3", map[string]any{"extensions": apqExtensions(strings.Repeat("cd", 32))})
		if err != nil || a.code() != api.CodePersistedQueryNotFound {
			t.Errorf("an unknown hash: %v %s", err, a)
		}
	})

	t.Run("a subscription by its doc_id is a stream", func(t *testing.T) {
		// urql's Accept ranks JSON first: only the text shows the request
		// to be a subscription, which a stream must answer.
		b, _ := json.Marshal(map[string]any{"doc_id": eventsID, "variables": map[string]any{"after": nil}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		resp := postAccept(t, ctx, s, open.CreateUser("streamer").Token, "application/graphql-response+json, application/json, text/event-stream", b)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			t.Errorf("status %d, Content-Type %q: %s", resp.StatusCode, ct, line)
		}
	})
}

// operateWith is operate with a subscribe payload of its own.
func operateWith(ws *apitest.Socket, id string, payload map[string]any) (answer, error) {
	b, _ := json.Marshal(payload)
	return operatePayload(ws, id, b)
}

// Without -trusted-only, the trusted documents are served by their ids
// and every other document runs as before: automatic persisted queries
// included, whose unknown hash is PERSISTED_QUERY_NOT_FOUND with 200.
func TestTrustedDocumentsBesideOthers(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) { c.Trusted = trustedManifests(t) })
	s.Sample()
	for name, body := range map[string]map[string]any{
		"by doc_id":        {"doc_id": relayID},
		"by Apollo's hash": {"extensions": apqExtensions(apolloID)},
		"another query":    {"query": "{ users(first: 3) { totalCount } }"},
	} {
		if r := postJSON(s, "", body); r.Status != 200 || len(r.Parsed.Errors) > 0 || !strings.Contains(string(r.Parsed.Data), "totalCount") {
			t.Errorf("%s: status %d: %s", name, r.Status, r.Body)
		}
	}
	for name, body := range map[string]map[string]any{
		"an unknown doc_id": {"doc_id": "nope"},
		"an unknown hash":   {"extensions": apqExtensions(strings.Repeat("ab", 32))},
	} {
		for _, accept := range []string{"application/json", "application/graphql-response+json"} {
			if r := postJSON(s, accept, body); r.Parsed.Code() != api.CodePersistedQueryNotFound || (r.Status != 200 && name == "an unknown hash") {
				t.Errorf("%s, Accept %s: status %d: %s", name, accept, r.Status, r.Body)
			}
		}
	}
}

// Reloading the documents while requests run drops none of them: each
// runs with the set it started with, old or new.
func TestTrustedReloadKeepsRequests(t *testing.T) {
	t.Parallel()
	docs := trustedManifests(t)
	s, _ := trustedOnlyServer(t, docs)
	stop := apitest.Meanwhile(4, func() string {
		r := postJSON(s, "", map[string]any{"doc_id": relayID})
		if r.Status != 200 || len(r.Parsed.Errors) > 0 {
			return string(r.Body)
		}
		return ""
	})
	for range 50 {
		if _, err := docs.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	if failed := stop(); len(failed) > 0 {
		t.Errorf("%d requests failed during reloads, the first: %s", len(failed), failed[0])
	}
}

// What trusted documents add to a request: a small query sent as text to
// a server without them, as text and by its id to one with them, and by
// its id under -trusted-only (docs/trusted-documents.md, "Cost").
func BenchmarkTrustedDocuments(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "relay.json")
	relay, _ := json.Marshal(map[string]string{relayID: trustedViewer})
	os.WriteFile(path, relay, 0o644)
	docs, err := api.OpenTrustedDocuments([]string{path})
	if err != nil {
		b.Fatal(err)
	}
	plain := apitest.Start(b)
	plain.Sample()
	with := apitest.StartOn(b, plain.DSN, func(c *api.Config) { c.Trusted = docs })
	only := apitest.StartOn(b, plain.DSN, func(c *api.Config) { c.Trusted, c.TrustedOnly = docs, true })
	text, _ := json.Marshal(map[string]any{"query": trustedViewer})
	byID, _ := json.Marshal(map[string]any{"doc_id": relayID})
	for _, bc := range []struct {
		name string
		s    *apitest.Server
		body []byte
	}{
		{"without/text", plain, text},
		{"with/text", with, text},
		{"with/doc_id", with, byID},
		{"only/doc_id", only, byID},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if r := bc.s.Raw("POST", "/graphql", "application/json", bc.body, nil); r.Status != 200 || len(r.Parsed.Errors) > 0 {
					b.Fatalf("status %d: %s", r.Status, r.Body)
				}
			}
		})
	}
}
