package api_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// Issue 27's attack on the caps per client: one client, at the default
// caps, holds as many streams as it is allowed (websockets and
// server-sent event streams together) and asks for more; the extra ones
// are refused with 429 TOO_MANY_STREAMS, and meanwhile another client's
// profile query keeps answering with its data, and /healthz and /metrics
// answer. What is asserted is that answers come, not how fast.
func TestAttackOneClientHoldsItsStreams(t *testing.T) {
	cfg := api.DefaultServerConfig()
	caps := api.DefaultClientCaps()
	caps.MaxStreams = cfg.MaxConns * 3 / 4 // as package main makes it
	s := apitest.Serve(t, listen(t), cfg, func(c *api.Config) { c.Caps = caps })
	s.Sample()
	mallory := s.CreateUser("mallory")
	attacker := from(t, "127.0.0.3", s.URL)

	const sse = 10 // of the attacker's streams; the rest are websockets
	held := 0
	for range caps.MaxClientStreams - sse {
		if conn, r, err := openSocket(t, attacker, s.URL, mallory.Token); conn == nil {
			t.Fatalf("websocket %d of the %d a client may hold: %+v %v", held+1, caps.MaxClientStreams, r, err)
		}
		held++
	}
	for range sse {
		if _, r := openEvents(t.Context(), t, attacker, s.URL, mallory.Token); r != nil {
			t.Fatalf("stream %d of the %d a client may hold, server-sent events: refused %+v", held+1, caps.MaxClientStreams, r)
		}
		held++
	}
	want := refusal{status: http.StatusTooManyRequests, retryAfter: "5", code: api.CodeTooManyStreams}
	for range 5 {
		if conn, r, err := openSocket(t, attacker, s.URL, mallory.Token); conn != nil || r == nil || *r != want {
			t.Errorf("a websocket past the client's %d streams: %+v %v; want refused %+v", caps.MaxClientStreams, r, err, want)
		}
		if _, r := openEvents(t.Context(), t, attacker, s.URL, mallory.Token); r == nil || *r != want {
			t.Errorf("server-sent events past the client's %d streams: %+v; want refused %+v", caps.MaxClientStreams, r, want)
		}
	}

	// Another client (the default one, from 127.0.0.1) is answered while
	// the attacker holds its streams.
	client := &http.Client{Timeout: 10 * time.Second}
	var slowest time.Duration
	for range 50 {
		start := time.Now()
		resp, err := client.Post(s.URL+"/graphql", "application/json", bytes.NewReader(apitest.Body(apitest.ProfileQuery, nil)))
		if err != nil {
			t.Fatalf("the profile query while one client holds %d streams: %v", held, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"name":"alice"`)) || bytes.Contains(body, []byte(`"errors"`)) {
			t.Fatalf("the profile query while one client holds %d streams: %d %.300s", held, resp.StatusCode, body)
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("one client holding %d streams: 50 profile queries from another answered, the slowest in %v", held, slowest)
	answers(t, "a third client", from(t, "127.0.0.2", s.URL), s.URL)
}
