package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"

	coderws "github.com/coder/websocket"
)

// from is an HTTP client whose connections come from the loopback address
// ip (127.0.0.2, 127.0.0.3, ...): another client as the server counts
// them. Linux routes all of 127/8 to the loopback interface; where a
// second loopback address cannot be bound (macOS), the test skips.
func from(t *testing.T, ip, serverURL string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	probe, err := d.Dial("tcp", strings.TrimPrefix(serverURL, "http://"))
	if err != nil {
		t.Skipf("cannot connect from %s, which this test takes for a second client: %v", ip, err)
	}
	probe.Close()
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// refusal is how the server refused a stream or a connection: the HTTP
// status, the Retry-After header and the error code of the body.
type refusal struct {
	status     int
	retryAfter string
	code       string
}

func refusalOf(resp *http.Response) refusal {
	r := refusal{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	var body struct{ Errors []apitest.Error }
	b, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(b, &body) == nil && len(body.Errors) > 0 {
		r.code, _ = body.Errors[0].Extensions["code"].(string)
	}
	return r
}

// openSocket opens a graphql-transport-ws websocket through client and
// signs in with token, or says how it was refused (nil when the attempt
// failed without an HTTP answer, such as a timeout).
func openSocket(t *testing.T, client *http.Client, url, token string) (*coderws.Conn, *refusal, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	conn, resp, err := coderws.Dial(ctx, apitest.WebsocketURL(url), &coderws.DialOptions{HTTPClient: client, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			r := refusalOf(resp)
			return nil, &r, err
		}
		return nil, nil, err
	}
	t.Cleanup(func() { conn.CloseNow() })
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	if err := conn.Write(ctx, coderws.MessageText, init); err != nil {
		return nil, nil, err
	}
	_, ack, err := conn.Read(ctx)
	if err != nil || !bytes.Contains(ack, []byte("connection_ack")) {
		return nil, nil, errors.Join(err, errors.New("no connection_ack: "+string(ack)))
	}
	return conn, nil, nil
}

// openEvents starts a followEvents stream over server-sent events through
// client, as token's viewer, until ctx ends: the open response, whose
// body is the stream, or how it was refused.
func openEvents(ctx context.Context, t *testing.T, client *http.Client, url, token string) (*http.Response, *refusal) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/graphql", bytes.NewReader(apitest.Body(apitest.FollowEventsSubscription, map[string]any{"after": nil})))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	c := *client
	c.Timeout = 0 // the stream stays open; the test's context ends it
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("server-sent events: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		r := refusalOf(resp)
		return nil, &r
	}
	return resp, nil
}

// answers checks that client gets its answers from the server at url:
// /healthz, /metrics, and alice's profile (the sample graph's) with its
// data.
func answers(t *testing.T, who string, client *http.Client, url string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Errorf("%s: GET %s: %v", who, path, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET %s: %d", who, path, resp.StatusCode)
		}
	}
	resp, err := client.Post(url+"/graphql", "application/json", bytes.NewReader(apitest.Body(apitest.ProfileQuery, nil)))
	if err != nil {
		t.Errorf("%s: the profile query: %v", who, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"name":"alice"`)) || bytes.Contains(body, []byte(`"errors"`)) {
		t.Errorf("%s: the profile query: %d %.300s", who, resp.StatusCode, body)
	}
}

// Finding 1 of issue 27: one client holding idle websockets up to
// -max-conns left every other client, /healthz and /metrics waiting. Now
// a client gets -max-client-conns connections, the next are answered 429
// TOO_MANY_CONNECTIONS at once without taking a slot of -max-conns, and
// another client's requests are answered meanwhile.
func TestClientConnectionCap(t *testing.T) {
	cfg := api.DefaultServerConfig()
	cfg.MaxConns, cfg.MaxClientConns = 16, 10
	s := apitest.Serve(t, listen(t), cfg)
	s.Sample()
	mallory := s.CreateUser("mallory")
	attacker, other := from(t, "127.0.0.3", s.URL), from(t, "127.0.0.2", s.URL)

	var held []*coderws.Conn
	refused := map[refusal]int{}
	for range cfg.MaxConns + 3 {
		conn, r, err := openSocket(t, attacker, s.URL, mallory.Token)
		switch {
		case conn != nil:
			held = append(held, conn)
		case r != nil:
			refused[*r]++
		default:
			t.Logf("a websocket neither opened nor refused: %v", err)
		}
	}
	want := refusal{status: http.StatusTooManyRequests, retryAfter: "5", code: api.CodeTooManyConnections}
	if len(held) != cfg.MaxClientConns || refused[want] != cfg.MaxConns+3-cfg.MaxClientConns {
		t.Errorf("one client asked for %d websockets: %d opened, refused %v; want %d opened, the rest refused %+v",
			cfg.MaxConns+3, len(held), refused, cfg.MaxClientConns, want)
	}
	answers(t, "another client, while one holds its connections", other, s.URL)

	// A connection closed frees its place for the client's next.
	if len(held) > 0 {
		held[0].CloseNow()
		deadline := time.Now().Add(5 * time.Second)
		for {
			conn, _, err := openSocket(t, attacker, s.URL, mallory.Token)
			if conn != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a websocket closed 5 s ago, the client's next is still refused: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Finding 1 of issue 27, its second half: a websocket on the legacy
// graphql-ws subprotocol (or on none, which gqlgen takes for it) needed
// no liveness, so a client that never read held it until TCP gave up.
// Every websocket is now pinged at the websocket level; one whose client
// does not read, and so never answers, is closed within a few intervals,
// while one that reads (its library answers pings itself) stays open.
func TestLegacySocketsMustAnswerPings(t *testing.T) {
	const keepAlive = 200 * time.Millisecond
	s := apitest.Start(t, func(c *api.Config) { c.Streams.KeepAlive = keepAlive })
	ann := s.CreateUser("ann")
	for _, subprotocol := range []string{"graphql-ws", ""} {
		t.Run("subprotocol="+subprotocol, func(t *testing.T) {
			dial := func() *coderws.Conn {
				t.Helper()
				opts := &coderws.DialOptions{}
				if subprotocol != "" {
					opts.Subprotocols = []string{subprotocol}
				}
				conn, _, err := coderws.Dial(t.Context(), apitest.WebsocketURL(s.URL), opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.CloseNow() })
				init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + ann.Token}})
				if err := conn.Write(t.Context(), coderws.MessageText, init); err != nil {
					t.Fatal(err)
				}
				return conn
			}
			silent, reading := dial(), dial()
			// The reading client reads (and so answers pings) for ten
			// and a half intervals; the silent one reads nothing
			// meanwhile. The half keeps the end of the reading off a
			// ping: a read whose context ends closes the connection, and
			// a ping answered at that moment failed on the closed
			// connection instead of reporting the deadline. What counts
			// is that the connection lasted until the deadline.
			ctx, cancel := context.WithTimeout(t.Context(), 10*keepAlive+keepAlive/2)
			defer cancel()
			var err error
			for err == nil {
				_, _, err = reading.Read(ctx)
			}
			if ctx.Err() == nil {
				t.Errorf("a client that reads was disconnected: %v", err)
			}
			// What the silent one was sent before it was cut off is still
			// there to read; then the connection must have ended.
			ctx, cancel = context.WithTimeout(t.Context(), 5*keepAlive)
			defer cancel()
			n := 0
			for err = nil; err == nil; n++ {
				_, _, err = silent.Read(ctx)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a client that never read is still connected after %v (it had %d messages waiting)", 15*keepAlive, n-1)
			}
		})
	}
}

// Streams per client count websockets and server-sent event streams
// together: past -max-client-streams either is refused with 429
// TOO_MANY_STREAMS and Retry-After, while the client's requests are still
// answered; past -max-streams every client is refused, the connections
// left being for requests.
func TestStreamCaps(t *testing.T) {
	s := apitest.Start(t, func(c *api.Config) { c.Caps.MaxClientStreams, c.Caps.MaxStreams = 3, 4 })
	s.Sample()
	ann := s.CreateUser("ann")
	local := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	var held []*coderws.Conn
	for range 2 {
		conn, r, err := openSocket(t, local, s.URL, ann.Token)
		if conn == nil {
			t.Fatalf("websocket: %+v %v", r, err)
		}
		held = append(held, conn)
	}
	if _, r := openEvents(t.Context(), t, local, s.URL, ann.Token); r != nil {
		t.Fatalf("an event stream beside two websockets: refused %+v", r)
	}
	want := refusal{status: http.StatusTooManyRequests, retryAfter: "5", code: api.CodeTooManyStreams}
	if _, r, err := openSocket(t, local, s.URL, ann.Token); r == nil || *r != want {
		t.Errorf("a fourth stream, a websocket: %+v %v; want refused %+v", r, err, want)
	}
	if _, r := openEvents(t.Context(), t, local, s.URL, ann.Token); r == nil || *r != want {
		t.Errorf("a fourth stream, server-sent events: %+v; want refused %+v", r, want)
	}
	answers(t, "a client at its stream cap", local, s.URL)

	other := from(t, "127.0.0.2", s.URL)
	if conn, r, err := openSocket(t, other, s.URL, ann.Token); conn == nil {
		t.Errorf("another client's first stream: refused %+v %v", r, err)
	}
	if _, r, err := openSocket(t, other, s.URL, ann.Token); r == nil || *r != want {
		t.Errorf("a stream past -max-streams: %+v %v; want refused %+v", r, err, want)
	}

	// A stream that ends frees its place.
	held[0].Close(coderws.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, _, err := openSocket(t, local, s.URL, ann.Token)
		if conn != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a websocket closed 5 s ago, the client's next is still refused: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nextOrRefused reads conn's messages until n have come that are a
// subscription's next, and counts those that refuse it with
// SUBSCRIPTION_LIMIT and those that carry an event.
func nextOrRefused(t *testing.T, conn *coderws.Conn, n int) (refused, events int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for refused+events < n {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("after %d refusals and %d events: %v", refused, events, err)
		}
		var m apitest.Message
		json.Unmarshal(b, &m)
		switch {
		case m.Type != "next":
		case bytes.Contains(m.Payload, []byte(api.CodeSubscriptionLimit)):
			refused++
		case bytes.Contains(m.Payload, []byte("FOLLOWED")):
			events++
		default:
			t.Fatalf("unexpected %s", b)
		}
	}
	return refused, events
}

// Finding 6 of issue 27: one viewer's 100 sockets of 10 subscriptions
// each made every follow it heard cost 990 deliveries. Now a viewer runs
// at most -max-viewer-subscriptions over all its websockets and
// server-sent event streams; the rest are refused with
// SUBSCRIPTION_LIMIT, and other viewers are not affected.
func TestViewerSubscriptionCap(t *testing.T) {
	const perSocket, perViewer, sockets = 3, 5, 3
	s := apitest.Start(t, func(c *api.Config) {
		c.Streams.MaxSubscriptions = perSocket
		c.Caps.MaxViewerSubscriptions = perViewer
	})
	ann, bob, cat, dan := s.CreateUser("ann"), s.CreateUser("bob"), s.CreateUser("cat"), s.CreateUser("dan")
	s.Follow(cat, bob) // an event, so that the cursor below replays what follows it
	// At the newest event, so that no resume replays (and none takes a
	// replay slot, which a viewer has two of).
	cursor := s.EventCursor(ann)
	var conns []*coderws.Conn
	for range sockets {
		conn, r, err := openSocket(t, http.DefaultClient, s.URL, ann.Token)
		if conn == nil {
			t.Fatalf("websocket: %+v %v", r, err)
		}
		for i := range perSocket {
			m, _ := json.Marshal(apitest.Message{ID: string(rune('a' + i)), Type: "subscribe",
				Payload: apitest.Body(apitest.FollowEventsSubscription, map[string]any{"after": cursor})})
			if err := conn.Write(t.Context(), coderws.MessageText, m); err != nil {
				t.Fatal(err)
			}
		}
		conns = append(conns, conn)
	}
	dans := s.Subscriber(dan.Token)
	dans.Subscribe("d", s.EventCursor(dan))
	s.Follow(bob, ann) // each subscription of ann's that runs hears it
	s.Follow(bob, dan)

	refused, events := 0, 0
	for _, c := range conns {
		r, e := nextOrRefused(t, c, perSocket)
		refused, events = refused+r, events+e
	}
	if refused != sockets*perSocket-perViewer || events != perViewer {
		t.Errorf("one viewer asked for %d subscriptions over %d websockets: %d refused, %d ran; want %d refused with %s",
			sockets*perSocket, sockets, refused, events, sockets*perSocket-perViewer, api.CodeSubscriptionLimit)
	}
	if e := dans.Next(); e.String() != "FOLLOWED bob->dan" {
		t.Errorf("another viewer heard %s", e)
	}

	// Server-sent events count against the same cap.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, r := openEvents(ctx, t, http.DefaultClient, s.URL, ann.Token)
	if r != nil {
		t.Fatalf("an event stream: refused %+v", r)
	}
	body, _ := io.ReadAll(bufio.NewReader(resp.Body)) // a refused subscription completes at once
	if !bytes.Contains(body, []byte(api.CodeSubscriptionLimit)) {
		t.Errorf("a subscription over server-sent events past the viewer's cap: %.300s", body)
	}
}
