package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"follows/api/apitest"
)

// What the server keeps across requests is bounded by its own limits, never
// by the size of the requests it saw: a string it keeps from a request (a
// metrics label, a cache key) that is a piece of a larger one (the
// document, the URL) keeps all of the larger one alive. These tests send
// 20 requests of 500 KB each (10 MB, which a server that keeps them keeps
// live) and allow 5 MB; they measure the live heap, so they do not run in
// parallel with others.
const (
	bigRequests = 20
	bigRequest  = 500 << 10
	heapAllowed = 5 << 20
)

// liveHeapGrowth is how much live heap doing f left behind, in bytes.
// Memory that only an object with a finalizer holds (a connection, a
// file) outlives the first collection after it is let go, when the
// finalizer runs: the servers of the tests before, for one, so a single
// collection before measuring would count their memory as freed by f.
func liveHeapGrowth(f func()) int64 {
	settled := func() int64 {
		var m runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := settled()
	f()
	return settled() - before
}

// checkHeapGrowth fails the test if grew, after sending what, is over
// heapAllowed.
func checkHeapGrowth(t *testing.T, grew int64, what string) {
	t.Helper()
	t.Logf("live heap grew %d KB", grew>>10)
	if grew > heapAllowed {
		t.Errorf("%d %s of %d KB left %d MB live; want under %d MB", bigRequests, what, bigRequest>>10, grew>>20, heapAllowed>>20)
	}
}

// Issue 27, finding 5: each operation name's label was a piece of its
// document, so 120 anonymous 900 KB documents with distinct names kept
// 92 MB alive for good. Here big documents with distinct names (padded
// with a comment, which costs no tokens, so that each passes every limit),
// then enough small documents to push them out of the query cache (which
// holds 1,000), leave the labels and nothing of the documents.
func TestOperationNamesKeepNoDocument(t *testing.T) {
	s := apitest.Start(t)
	padding := "\n#" + strings.Repeat("x", bigRequest)
	grew := liveHeapGrowth(func() {
		for i := range bigRequests {
			q := fmt.Sprintf("query Padded%d { __typename }", i) + padding
			if r := s.Send(post(s, apitest.Body(q, nil))); r.Status != 200 || len(r.Parsed.Errors) > 0 {
				t.Fatalf("document %d: status %d: %.300s", i, r.Status, r.Body)
			}
		}
		for i := range 1000 {
			if r := s.Send(post(s, apitest.Body(fmt.Sprintf("{ a%d: __typename }", i), nil))); r.Status != 200 {
				t.Fatalf("small document %d: status %d: %.300s", i, r.Status, r.Body)
			}
		}
	})
	checkHeapGrowth(t, grew, "documents, no longer cached,")
	last := fmt.Sprintf(`follows_graphql_requests_total{operation="Padded%d"} 1`, bigRequests-1)
	if body := string(s.Raw("GET", "/metrics", "", nil, nil).Body); !strings.Contains(body, last) {
		t.Errorf("/metrics lacks %s", last)
	}
}

// getQuery sends query in a GET's query string, unescaped, with extra
// after it, and fails the test unless it is answered.
func getQuery(t *testing.T, s *apitest.Server, query, extra string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.URL+"/graphql?query="+query+extra, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Send(req); r.Status != 200 || len(r.Parsed.Errors) > 0 {
		t.Fatalf("GET %s: status %d: %.300s", query, r.Status, r.Body)
	}
}

// A GET's query is a piece of its URL, when it needs no escaping (braces
// and colons need none): the query cache, which weighs a document by its
// query, kept a query of a few bytes with the 500 KB URL it came in; its
// 1,000 entries could keep a gigabyte.
func TestCachedQueryKeepsNoURL(t *testing.T) {
	s := apitest.Start(t)
	pad := "&pad=" + strings.Repeat("x", bigRequest)
	grew := liveHeapGrowth(func() {
		for i := range bigRequests {
			getQuery(t, s, fmt.Sprintf("{a%d:__typename}", i), pad)
		}
	})
	checkHeapGrowth(t, grew, "cached queries of a few bytes, sent in URLs")
}

// The same for the persisted-query cache: a query already in the query
// cache, sent again with its hash in a 500 KB URL, was kept by the
// persisted-query cache as the piece of the URL it was.
func TestPersistedQueryKeepsNoURL(t *testing.T) {
	s := apitest.Start(t)
	pad := "&pad=" + strings.Repeat("x", bigRequest)
	grew := liveHeapGrowth(func() {
		for i := range bigRequests {
			query := fmt.Sprintf("{a%d:__typename}", i)
			getQuery(t, s, query, "")
			sum := sha256.Sum256([]byte(query))
			ext := fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":"%s"}}`, hex.EncodeToString(sum[:]))
			getQuery(t, s, query, "&extensions="+url.QueryEscape(ext)+pad)
		}
	})
	checkHeapGrowth(t, grew, "persisted queries of a few bytes, sent in URLs")
}
