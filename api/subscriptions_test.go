package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// script runs the mutations of the follow events tests over HTTP.
type script struct {
	t *testing.T
	s *apitest.Server
}

func (sc script) do(who apitest.Account, query string, whom apitest.Account, extra map[string]any) {
	sc.t.Helper()
	vars := map[string]any{"id": whom.ID}
	for k, v := range extra {
		vars[k] = v
	}
	if r := sc.s.Do(who.Token, query, vars); len(r.Errors) > 0 {
		sc.t.Fatalf("%s: %+v", query, r.Errors)
	}
}

func (sc script) follow(a, b apitest.Account) {
	sc.t.Helper()
	sc.do(a, `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`, b, nil)
}

func (sc script) unfollow(a, b apitest.Account) {
	sc.t.Helper()
	sc.do(a, `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`, b, nil)
}

func (sc script) update(a, b apitest.Account, muted, notifications *bool) {
	sc.t.Helper()
	sc.do(a, `mutation($id: ID!, $m: Boolean, $n: Boolean) {
  updateFollow(input: {userId: $id, muted: $m, notificationsEnabled: $n}) { alreadyFollowing } }`, b,
		map[string]any{"m": muted, "n": notifications})
}

func (sc script) block(a, b apitest.Account) {
	sc.t.Helper()
	sc.do(a, `mutation($id: ID!) { block(input: {userId: $id}) { alreadyBlocked } }`, b, nil)
}

func (sc script) deactivate(a apitest.Account, off bool) {
	sc.t.Helper()
	q := `mutation { reactivateAccount { user { id } } }`
	if off {
		q = `mutation { deactivateAccount { user { id } } }`
	}
	if r := sc.s.Do(a.Token, q, nil); len(r.Errors) > 0 {
		sc.t.Fatalf("%s: %+v", q, r.Errors)
	}
}

func received(ws *apitest.Socket, n int) []apitest.FollowEvent {
	var evs []apitest.FollowEvent
	for range n {
		evs = append(evs, ws.Next())
	}
	return evs
}

func names(evs []apitest.FollowEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.String())
	}
	return out
}

// A scripted sequence of follows, unfollows, mutes, notification settings
// and blocks reaches a websocket subscriber in order by the delivery
// rules; resuming with a cursor gets every later event exactly once, by
// the rules as they stand then (a block, a deactivation).
func TestFollowEventsOverWebsocket(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		s := d.Start(t)
		sc := script{t, s}
		u := map[string]apitest.Account{}
		for _, n := range []string{"ann", "bob", "cat", "dan", "eve"} {
			u[n] = s.CreateUser(n)
		}
		ann, bob, cat, dan, eve := u["ann"], u["bob"], u["cat"], u["dan"], u["eve"]
		yes, no := true, false
		sc.follow(ann, bob) // ann's own actions are not echoed to her
		sc.follow(ann, cat)
		sc.update(ann, cat, &yes, nil)
		sc.follow(ann, dan)
		sc.update(ann, dan, nil, &no)

		ws := s.Subscriber(ann.Token)
		ws.Subscribe("1", s.EventCursor(ann))
		sc.follow(bob, eve)   // ann follows bob, notifications on: heard
		sc.follow(cat, eve)   // muted: not heard
		sc.follow(dan, eve)   // notifications off: not heard
		sc.unfollow(bob, eve) // followers hear FOLLOWED only
		sc.follow(eve, ann)
		sc.unfollow(eve, ann)
		sc.follow(eve, ann)
		// The rules apply when an event is delivered: these are received
		// before the block, which would withhold them.
		got := received(ws, 4)
		sc.block(ann, eve)  // removes eve->ann: not announced
		sc.follow(bob, eve) // involves eve, whom ann blocks: not heard
		sc.follow(cat, ann)
		sc.follow(bob, ann)
		got = append(got, received(ws, 2)...)
		want := []string{"FOLLOWED bob->eve", "FOLLOWED eve->ann", "UNFOLLOWED eve->ann", "FOLLOWED eve->ann",
			"FOLLOWED cat->ann", "FOLLOWED bob->ann"}
		if !slices.Equal(names(got), want) {
			t.Fatalf("ann heard %q, want %q", names(got), want)
		}

		// Resume after the second event: eve is blocked now, so only
		// cat's and bob's follows remain, each once, then the stream goes
		// on live.
		resume := func(after string, n int) []string {
			t.Helper()
			ws := s.Subscriber(ann.Token)
			defer ws.Close()
			ws.Subscribe("r", after)
			sc.follow(dan, ann) // a live event after the replay
			sc.unfollow(dan, ann)
			return names(received(ws, n))
		}
		got2 := resume(got[1].Cursor, 3)
		want = []string{"FOLLOWED cat->ann", "FOLLOWED bob->ann", "FOLLOWED dan->ann"}
		if !slices.Equal(got2, want) {
			t.Errorf("resumed after %s, ann heard %q, want %q", got[1], got2, want)
		}
		// A deactivated account's events are withheld, on resume too.
		sc.deactivate(cat, true)
		got2 = resume(got[4].Cursor, 3)
		want = []string{"FOLLOWED bob->ann", "FOLLOWED dan->ann", "UNFOLLOWED dan->ann"}
		if !slices.Equal(got2, want) {
			t.Errorf("with cat deactivated, ann heard %q, want %q", got2, want)
		}
	})
}

// A subscription without a valid token is refused at connection_init
// (4403); a connection that does not sign in within the authentication
// timeout is closed with 4408; a connection runs at most
// MaxSubscriptions; and a subscription over server-sent events works as
// over the websocket.
func TestFollowEventsRefusals(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) {
		c.Streams.AuthTimeout = 200 * time.Millisecond
		c.Streams.MaxSubscriptions = 1
	})
	ann := s.CreateUser("ann")

	ws, err := apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err = ws.Init(map[string]any{}); apitest.CloseStatus(err) != api.CloseForbidden {
		t.Errorf("anonymous connection_init: %v, want close %d", err, api.CloseForbidden)
	}

	ws, err = apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = ws.Read(); apitest.CloseStatus(err) != api.CloseInitTimeout {
		t.Errorf("no connection_init: %v, want close %d", err, api.CloseInitTimeout)
	}

	ws = s.Subscriber(ann.Token)
	ws.Subscribe("1", "")
	ws.Subscribe("2", "")
	// Either may be the one refused: the transport starts each in a
	// goroutine of its own.
	m, err := ws.Read()
	if err != nil || m.Type != "next" || !strings.Contains(string(m.Payload), api.CodeSubscriptionLimit) {
		t.Errorf("second subscription: %+v %s, %v; want %s", m, m.Payload, err, api.CodeSubscriptionLimit)
	}
}

// sseEvents posts a followEvents subscription as graphql-sse's distinct
// connections mode does and returns the data of its "next" events, read
// as they come.
func sseEvents(t *testing.T, s *apitest.Server, token, after string) (<-chan string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	vars := map[string]any{"after": nil}
	if after != "" {
		vars["after"] = after
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/graphql", bytes.NewReader(apitest.Body(apitest.FollowEventsSubscription, vars)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	out := make(chan string)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "next":
				select {
				case out <- strings.TrimPrefix(line, "data: "):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, cancel
}

// Server-sent events carry the same stream as the websocket, and refuse
// an anonymous subscription.
func TestFollowEventsOverSSE(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		s := d.Start(t)
		sc := script{t, s}
		ann, bob := s.CreateUser("ann"), s.CreateUser("bob")
		sc.follow(ann, bob)
		events, stop := sseEvents(t, s, ann.Token, s.EventCursor(ann))
		defer stop()
		sc.follow(bob, ann)
		sc.unfollow(bob, ann)
		for _, want := range []string{"FOLLOWED bob->ann", "UNFOLLOWED bob->ann"} {
			var r struct {
				Data struct{ FollowEvents apitest.FollowEvent }
			}
			if err := json.Unmarshal([]byte(<-events), &r); err != nil {
				t.Fatal(err)
			}
			if got := r.Data.FollowEvents.String(); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		}

		anon, stopAnon := sseEvents(t, s, "", "")
		defer stopAnon()
		if got := <-anon; !strings.Contains(got, "UNAUTHENTICATED") {
			t.Errorf("anonymous subscription: %s", got)
		}
	})
}

// smallSendBuffers accepts connections with a small kernel send buffer,
// so that a client that stops reading fills it within kilobytes rather
// than the megabytes loopback TCP would otherwise absorb.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// smallReceiveBuffers is a client whose connections have a small kernel
// receive buffer, the other half of what a client that does not read
// may leave unread. It is set before connecting, as the window the
// connection opens with is sized from it.
func smallReceiveBuffers() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// A subscriber that stops reading while events keep coming is dropped
// with CloseSlowConsumer once its send queue is full, rather than
// buffered without bound; what it receives before the close is the
// first of its events, in order, and the server goes on serving.
func TestFollowEventsSlowConsumer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := apitest.Serve(t, smallSendBuffers{ln}, api.DefaultServerConfig(), func(c *api.Config) {
		c.Streams.SendQueue = 2
		// How long a full queue waits for the client before dropping
		// it: short, so that the overflow comes well before the test
		// reads again (a write itself may wait the default 10 s).
		c.Streams.QueueWait = 50 * time.Millisecond
	})
	sc := script{t, s.Server}
	ann := s.CreateUser("ann")
	// Far more events than the queue and both buffers hold (9 to 48 of
	// them fit, measured with and without -race), so that the queue has
	// overflowed well before the last follow returns and the subscriber
	// starts reading again.
	const n = 150
	followers := make([]apitest.Account, n)
	for i := range followers {
		followers[i] = s.CreateUser(fmt.Sprintf("f%03d", i))
	}
	var want []string
	for _, f := range followers {
		want = append(want, "FOLLOWED "+f.Name+"->ann")
	}

	// A generous deadline for what follows: without the bound, reads
	// wait for a close that never comes.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, err := apitest.DialSocketVia(ctx, t, smallReceiveBuffers(), apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Init(map[string]any{"Authorization": "Bearer " + ann.Token}); err != nil {
		t.Fatal(err)
	}
	// An event ann does not hear, so that there is a cursor to subscribe
	// after: "from now" would race the first follow.
	sc.follow(followers[1], followers[2])
	ws.Subscribe("1", s.EventCursor(ann))
	for _, f := range followers {
		sc.follow(f, ann)
	}

	got, err := readUntilClose(ws, n)
	if apitest.CloseStatus(err) != api.CloseSlowConsumer {
		t.Fatalf("after %d of %d events: %v; want close %d", len(got), n, err, api.CloseSlowConsumer)
	}
	t.Logf("%d of %d events reached the slow subscriber before its close", len(got), n)
	if len(got) >= n || !slices.Equal(names(got), want[:len(got)]) {
		t.Fatalf("before its close, the slow subscriber heard %q; want fewer than all %d, in order", names(got), n)
	}

	// The server goes on serving, and resuming with the last cursor
	// received gets the rest, each once, though they are far more than
	// the queue and the small buffers hold: a client that reads is never
	// dropped. (Dropping whenever the queue was full made every such
	// resume end in 1013 with no event delivered.)
	sc.unfollow(followers[0], ann)
	want = append(want, "UNFOLLOWED f000->ann")
	again, err := apitest.DialSocketVia(ctx, t, smallReceiveBuffers(), apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Init(map[string]any{"Authorization": "Bearer " + ann.Token}); err != nil {
		t.Fatal(err)
	}
	again.Subscribe("r", got[len(got)-1].Cursor)
	more, err := readUntilClose(again, len(want)-len(got))
	if err != nil {
		t.Fatalf("resumed after %d events, heard %d more, then: %v", len(got), len(more), err)
	}
	if got = append(got, more...); !slices.Equal(names(got), want) {
		t.Errorf("with the resume, the subscriber heard %q; want %q", names(got), want)
	}
}

// readUntilClose reads follow events from ws until it has max of them or
// the connection ends, returning them and the error that ended it.
func readUntilClose(ws *apitest.Socket, max int) ([]apitest.FollowEvent, error) {
	var got []apitest.FollowEvent
	for len(got) < max {
		m, err := ws.Read()
		if err != nil {
			return got, err
		}
		var r struct {
			Data   struct{ FollowEvents apitest.FollowEvent }
			Errors []apitest.Error
		}
		if err := json.Unmarshal(m.Payload, &r); m.Type != "next" || err != nil || len(r.Errors) > 0 {
			return got, fmt.Errorf("got %s %s, want an event", m.Type, m.Payload)
		}
		got = append(got, r.Data.FollowEvents)
	}
	return got, nil
}
