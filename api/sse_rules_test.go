package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// urqlAccept is the Accept header urql's fetch exchange sends with every
// operation it POSTs.
const urqlAccept = "multipart/mixed, application/graphql-response+json, application/graphql+json, application/json, text/event-stream"

// A POST asking for server-sent events whose body never finishes is cut
// off at the request's deadline with the coded 408 any other request
// gets, rather than holding its connection open without end. Sixty such
// clients each get their answer.
func TestSSESlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) { c.RequestTimeout = 300 * time.Millisecond })
	addr := strings.TrimPrefix(s.URL, "http://")
	body := apitest.Body(apitest.FollowEventsSubscription, nil)
	const clients = 60
	var wg sync.WaitGroup
	answers := make(chan string, clients)
	for range clients {
		wg.Go(func() {
			answers <- slowBodyAnswer(t, addr, body)
		})
	}
	wg.Wait()
	close(answers)
	failed, first := 0, ""
	for a := range answers {
		if a != "" {
			failed++
			first = a
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d stalled SSE bodies without a coded 408, such as: %s", failed, clients, first)
	}
}

// slowBodyAnswer sends the headers of an SSE POST and half of its body,
// then waits; it returns what was wrong with the answer, "" if it was a
// coded 408.
func slowBodyAnswer(t *testing.T, addr string, body []byte) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	c.Write(body[:len(body)/2])
	// Far beyond the deadline: the test fails, rather than hangs, on a
	// server that never answers.
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Sprintf("no answer to a stalled SSE body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var r apitest.Response
	json.Unmarshal(b, &r)
	if resp.StatusCode != http.StatusRequestTimeout || r.Code() != api.CodeBadRequest {
		return fmt.Sprintf("stalled SSE body: %d %s, want 408 %s", resp.StatusCode, b, api.CodeBadRequest)
	}
	return ""
}

// postAccept sends a GraphQL POST with an Accept header and returns the
// response, its body unread.
func postAccept(t *testing.T, ctx context.Context, s *apitest.Server, token, accept string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A query gets the JSON answer its client ranks first, even when the
// client also accepts server-sent events (urql's default Accept): only a
// subscription, or a client that ranks text/event-stream first, gets a
// stream.
func TestAcceptNegotiation(t *testing.T) {
	t.Parallel()
	// A short deadline, which a request that waited for an event would
	// meet.
	s := apitest.Start(t, func(c *api.Config) { c.RequestTimeout = 2 * time.Second })
	ann := s.CreateUser("ann")
	query := apitest.Body(`{ viewer { name } }`, nil)
	for _, c := range []struct {
		accept, want string
	}{
		{urqlAccept, "application/graphql-response+json"},
		{"application/json, text/event-stream", "application/json"},
		// q-values rank, not the order in the list.
		{"application/graphql-response+json;q=0.5, application/json", "application/json"},
		{"application/json;q=0.9, application/graphql-response+json", "application/graphql-response+json"},
		{"text/event-stream;q=0.5, application/json", "application/json"},
		// A stream ranked first gets one, query or not (graphql-sse).
		{"text/event-stream", "text/event-stream"},
		{"application/json;q=0.5, text/event-stream", "text/event-stream"},
		// Not acceptable is not acceptable.
		{"text/event-stream;q=0, application/json;q=0.1", "application/json"},
		// As before: curl's */*, and no Accept at all.
		{"*/*", "application/json"},
		{"", "application/json"},
	} {
		resp := postAccept(t, t.Context(), s, ann.Token, c.accept, query)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if ct != c.want || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"viewer":{"name":"ann"}`) {
			t.Errorf("a query with Accept %q: %d %s %s; want %s", c.accept, resp.StatusCode, ct, b, c.want)
		}
	}

	// The same Accept on a subscription opens a stream (on a named
	// operation among others too), as does any that accepts one.
	for _, c := range []struct {
		accept string
		body   []byte
	}{
		{urqlAccept, apitest.Body(apitest.FollowEventsSubscription, nil)},
		{urqlAccept, []byte(`{"operationName":"Events","query":"query Me { viewer { id } } subscription Events { followEvents { event { type } } }"}`)},
		{"*/*", apitest.Body(apitest.FollowEventsSubscription, nil)},
		{"", apitest.Body(apitest.FollowEventsSubscription, nil)},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		resp := postAccept(t, ctx, s, ann.Token, c.accept, c.body)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("a subscription with Accept %q: %d %s %s; want a stream", c.accept, resp.StatusCode, ct, b)
		}
		cancel()
		resp.Body.Close()
	}

	// A subscription whose client accepts no stream is refused at once,
	// rather than waiting for an event until the deadline.
	resp := postAccept(t, t.Context(), s, ann.Token, "application/json", apitest.Body(apitest.FollowEventsSubscription, nil))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r apitest.Response
	json.Unmarshal(b, &r)
	if resp.StatusCode != http.StatusNotAcceptable || r.Code() != api.CodeBadRequest {
		t.Errorf("a subscription with Accept: application/json: %d %s; want 406 %s", resp.StatusCode, b, api.CodeBadRequest)
	}
}

// An SSE body that does not decode is refused with a short coded error
// that neither quotes the body back nor names a Go type, and nothing of
// it reaches the standard logger.
func TestSSEDecodeErrorIsBounded(t *testing.T) {
	// Not parallel: it reads what the process's standard logger writes.
	var logged bytes.Buffer
	defer log.SetOutput(log.Writer())
	log.SetOutput(&logged)

	s := apitest.Start(t)
	const marker = "hostile-padding-"
	pad := strings.Repeat(marker, 600_000/len(marker))
	for name, body := range map[string]string{
		"variables not an object": `{"query": "subscription { followEvents { event { type } } }", "variables": ["` + pad + `"]}`,
		"query not a string":      `{"query": ["` + pad + `"]}`,
		"not JSON":                `{"query": "` + pad,
	} {
		r := s.Raw("POST", "/graphql", "application/json", []byte(body), map[string]string{"Accept": "text/event-stream"})
		text := string(r.Body)
		if r.Status != http.StatusBadRequest || r.Parsed.Code() != api.CodeBadRequest || len(r.Body) > 1024 ||
			strings.Contains(text, marker) || strings.Contains(text, "Go ") || strings.Contains(text, "map[") ||
			strings.Contains(text, "RawParams") || strings.Contains(text, "interface") {
			if len(text) > 300 {
				text = text[:300] + fmt.Sprintf("... (%d bytes)", len(r.Body))
			}
			t.Errorf("%s: %d %s; want a short 400 %s", name, r.Status, text, api.CodeBadRequest)
		}
	}
	if l := logged.String(); strings.Contains(l, marker) || strings.Contains(l, "decoding error") {
		t.Errorf("the standard logger got %d bytes of a refused body", len(l))
	}
}

// A POST carrying Upgrade: h2c, as curl --http2 sends over http://, is a
// request like any: the server does not switch protocols, and answers it.
func TestUpgradeH2CIsAPlainRequest(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	h2c := map[string]string{
		"Upgrade":        "h2c",
		"Connection":     "Upgrade, HTTP2-Settings",
		"HTTP2-Settings": "AAMAAABkAAQCAAAAAAIAAAAA",
	}
	r := s.Raw("POST", "/graphql", "application/json", apitest.Body(`{ viewer { id } }`, nil), h2c)
	if r.Status != http.StatusOK || string(r.Parsed.Data) != `{"viewer":null}` {
		t.Errorf("POST with Upgrade: h2c: %d %s", r.Status, r.Body)
	}
	r = s.Raw("GET", "/graphql?query=%7Bviewer%7Bid%7D%7D", "", nil, h2c)
	if r.Status != http.StatusOK || string(r.Parsed.Data) != `{"viewer":null}` {
		t.Errorf("GET with Upgrade: h2c: %d %s", r.Status, r.Body)
	}
}
