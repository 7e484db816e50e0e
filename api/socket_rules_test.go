package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/auth/oidctest"
)

// A websocket lives by the rules of a request: each operation reads the
// graph as it stands, meets the request deadline, and is refused, with
// the socket closed, once the viewer's token has expired or its account
// has gone; a socket has a bounded number of operations in flight, and
// an id in use may not be used again.

// answer is what an operation sent over a websocket got: its responses,
// and the error message's errors if it ended with one.
type answer struct {
	responses []apitest.Response
	errors    []apitest.Error // of an "error" message
}

func (a answer) String() string {
	var b strings.Builder
	for _, r := range a.responses {
		fmt.Fprintf(&b, "next %s %+v; ", r.Data, r.Errors)
	}
	if a.errors != nil {
		fmt.Fprintf(&b, "error %+v", a.errors)
	}
	return b.String()
}

// code is the first error code of the answer, "" when none.
func (a answer) code() string {
	for _, r := range a.responses {
		if c := r.Code(); c != "" {
			return c
		}
	}
	if len(a.errors) > 0 {
		return fmt.Sprint(a.errors[0].Extensions["code"])
	}
	return ""
}

// operate runs query on ws as operation id and returns its answer, or the
// error that ended the connection before it completed.
func operate(ws *apitest.Socket, id, query string, vars map[string]any) (answer, error) {
	return operatePayload(ws, id, apitest.Body(query, vars))
}

// operatePayload is operate with the subscribe message's payload as it is
// given.
func operatePayload(ws *apitest.Socket, id string, payload []byte) (answer, error) {
	var a answer
	if err := ws.Send(apitest.Message{ID: id, Type: "subscribe", Payload: payload}); err != nil {
		return a, err
	}
	for {
		m, err := ws.Read()
		if err != nil {
			return a, err
		}
		if m.ID != id {
			continue
		}
		switch m.Type {
		case "next":
			var r apitest.Response
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				return a, err
			}
			a.responses = append(a.responses, r)
		case "error":
			json.Unmarshal(m.Payload, &a.errors)
			return a, nil
		case "complete":
			return a, nil
		}
	}
}

// dataOf decodes the data of an answer's one response into out, failing
// the test if it has errors.
func dataOf(t *testing.T, a answer, err error, out any) {
	t.Helper()
	if err != nil {
		t.Fatalf("on the socket: %v", err)
	}
	if len(a.responses) != 1 || len(a.responses[0].Errors) > 0 || len(a.errors) > 0 {
		t.Fatalf("on the socket: %s", a)
	}
	if err := json.Unmarshal(a.responses[0].Data, out); err != nil {
		t.Fatal(err)
	}
}

// closeOf reads ws until the server closes it, and returns the close code
// (-1 when the connection ended some other way), or 0 if it is still open
// after 5 seconds.
func closeOf(ws *apitest.Socket) int {
	done := make(chan int, 1)
	go func() {
		for {
			if _, err := ws.Read(); err != nil {
				done <- apitest.CloseStatus(err)
				return
			}
		}
	}()
	select {
	case code := <-done:
		return code
	case <-time.After(5 * time.Second):
		return 0 // the read goes on until the test's cleanup closes ws
	}
}

// Finding 7: on alice's open socket, each query sees the graph as a
// request would now: bob, deactivated since, is null as over HTTP, and
// carol's block shows. A deleted account's socket no longer answers
// viewer (nor anything else): it is closed with 4403.
func TestSocketOperationsReadTheGraphAsItStands(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		s := d.Start(t)
		sc := script{t, s}
		alice, bob, carol, dave := s.CreateUser("alice"), s.CreateUser("bob"), s.CreateUser("carol"), s.CreateUser("dave")
		ws := s.Subscriber(alice.Token)

		const lookup = `query($bob: ID!, $carol: ID!) {
  bob: user(id: $bob) { name }
  carol: user(id: $carol) { name blocksViewer } }`
		vars := map[string]any{"bob": bob.ID, "carol": carol.ID}
		type seen struct {
			Bob   *struct{ Name string }
			Carol *struct {
				Name         string
				BlocksViewer bool
			}
		}
		var before seen
		a, err := operate(ws, "1", lookup, vars)
		dataOf(t, a, err, &before)
		if before.Bob == nil || before.Carol == nil || before.Carol.BlocksViewer {
			t.Fatalf("before: %+v", before)
		}

		sc.deactivate(bob, true)
		sc.block(carol, alice)
		var after seen
		a, err = operate(ws, "2", lookup, vars)
		dataOf(t, a, err, &after)
		if after.Bob != nil {
			t.Errorf("bob deactivated: the socket still shows him (%+v); over HTTP he is null", after.Bob)
		}
		if after.Carol == nil || !after.Carol.BlocksViewer {
			t.Errorf("carol blocked alice: the socket shows %+v, want blocksViewer true", after.Carol)
		}
		var http struct{ User *struct{ Name string } }
		s.Data(alice.Token, `query($id: ID!) { user(id: $id) { name } }`, map[string]any{"id": bob.ID}, &http)
		if http.User != nil {
			t.Errorf("over HTTP, deactivated bob is %+v", http.User)
		}

		// dave's socket, then dave deletes his account.
		dws := s.Subscriber(dave.Token)
		var me struct{ Viewer *struct{ Name string } }
		a, err = operate(dws, "1", `{ viewer { name } }`, nil)
		dataOf(t, a, err, &me)
		if me.Viewer == nil || me.Viewer.Name != "dave" {
			t.Fatalf("dave's viewer: %+v", me.Viewer)
		}
		sc.do(dave, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId } }`, dave, nil)
		a, err = operate(dws, "2", `{ viewer { name } }`, nil)
		if a.code() != "UNAUTHENTICATED" {
			t.Errorf("deleted dave's socket answered viewer: %s", a)
		}
		if code := closeAfter(dws, err); code != api.CloseForbidden {
			t.Errorf("deleted dave's socket: closed %d (0: still open), want %d", code, api.CloseForbidden)
		}
	})
}

// closeAfter is closeOf unless err, from a read that met the close
// already, has it.
func closeAfter(ws *apitest.Socket, err error) int {
	if err != nil {
		return apitest.CloseStatus(err)
	}
	return closeOf(ws)
}

// Finding 7, with nothing sent: a socket whose subscription runs is
// closed with 4403 once its account is deleted, found at the next
// periodic check.
func TestSocketEndsWithItsAccount(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, func(c *api.Config) { c.Streams.KeepAlive = 200 * time.Millisecond })
	dave := s.CreateUser("dave")
	ws := s.Subscriber(dave.Token)
	ws.Subscribe("1", "")
	script{t, s}.do(dave, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId } }`, dave, nil)
	if code := closeOf(ws); code != api.CloseForbidden {
		t.Errorf("deleted dave's subscribing socket: closed %d (0: still open), want %d", code, api.CloseForbidden)
	}
}

// mint is a token for the user id that expires after ttl, signed with the
// test servers' secret.
func mint(t *testing.T, s *apitest.Server, id string, ttl time.Duration) (token string, expires time.Time) {
	t.Helper()
	uid, _ := strconv.ParseInt(id, 10, 64)
	users, err := s.Store.UsersByID(context.Background(), []int64{uid})
	if err != nil || users[0] == nil {
		t.Fatalf("user %s: %v", id, err)
	}
	tokens, err := auth.NewTokens([]byte(apitest.Secret), ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The expiry is in whole seconds.
	now := time.Now()
	return tokens.Mint(uid, users[0].SecurityStamp), time.Unix(now.Add(ttl).Unix(), 0)
}

// Finding 8: a socket does not outlive its token. A follow sent after
// the token expired is not made, and the socket is closed with 4403 (at
// the expiry). A deleted user's token, still valid, is refused at
// connection_init as HTTP refuses it.
func TestSocketEndsWithItsToken(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	alice, bob, eve := s.CreateUser("alice"), s.CreateUser("bob"), s.CreateUser("eve")

	token, expires := mint(t, s, alice.ID, 3*time.Second)
	ws := s.Subscriber(token)
	var me struct{ Viewer struct{ Name string } }
	a, err := operate(ws, "1", `{ viewer { name } }`, nil)
	dataOf(t, a, err, &me)
	time.Sleep(time.Until(expires) + 200*time.Millisecond)
	a, err = operate(ws, "2", apitest.FollowMutation, map[string]any{"id": bob.ID})
	if err == nil && a.code() != "UNAUTHENTICATED" {
		t.Errorf("a follow sent after the token expired: %s", a)
	}
	if code := closeAfter(ws, err); code != api.CloseForbidden {
		t.Errorf("after the token expired: closed %d (0: still open), want %d", code, api.CloseForbidden)
	}
	var bobs struct {
		User struct{ Followers struct{ TotalCount int } }
	}
	s.Data("", `query($id: ID!) { user(id: $id) { followers { totalCount } } }`, map[string]any{"id": bob.ID}, &bobs)
	if bobs.User.Followers.TotalCount != 0 {
		t.Errorf("bob has %d followers: the follow sent with an expired token was made", bobs.User.Followers.TotalCount)
	}

	sc := script{t, s}
	sc.do(eve, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId } }`, eve, nil)
	ews, err := apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ews.Init(map[string]any{"Authorization": "Bearer " + eve.Token}); apitest.CloseStatus(err) != api.CloseForbidden {
		t.Errorf("connection_init with deleted eve's token: %v, want close %d", err, api.CloseForbidden)
	}
}

// Finding 8 with a provider's token: the socket ends when the token does
// (its exp, and the leeway the server allows).
func TestSocketEndsWithItsProviderToken(t *testing.T) {
	t.Parallel()
	key := oidctest.NewKey(t, "k1", "RSA")
	p := oidctest.New(t, key)
	url := oidcServer(t, apitest.SQLite.NewDSN(t), p, p.JWKSURL, true)
	bobID, _ := whoAmI(t, url, oidctest.Sign(t, key, p.Claims("bob", time.Now())))

	// Good for two seconds more, counting the leeway.
	claims := p.Claims("alice", time.Now())
	expires := time.Now().Add(-auth.Leeway + 2*time.Second)
	claims["exp"] = expires.Unix()
	expires = time.Unix(expires.Unix(), 0).Add(auth.Leeway)
	token := oidctest.Sign(t, key, claims)

	ws, err := apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(url), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Init(map[string]any{"Authorization": "Bearer " + token}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expires) + 200*time.Millisecond)
	a, err := operate(ws, "1", apitest.FollowMutation, map[string]any{"id": bobID})
	if err == nil && a.code() != "UNAUTHENTICATED" {
		t.Errorf("a follow sent after the provider's token expired: %s", a)
	}
	if code := closeAfter(ws, err); code != api.CloseForbidden {
		t.Errorf("after the provider's token expired: closed %d (0: still open), want %d", code, api.CloseForbidden)
	}
	if r := ask(t, url, "", fmt.Sprintf(`{ user(id: %q) { followers { totalCount } } }`, bobID)); fmt.Sprint(r.data["user"]) != "map[followers:map[totalCount:0]]" {
		t.Errorf("bob: %+v; the follow sent with an expired token was made", r.data)
	}
}

// Finding 3: a burst of subscribes beyond the bound of operations in
// flight is refused, each with IN_FLIGHT_LIMIT, while those within run;
// once one ends, the socket takes another. A query over a socket has the
// request deadline.
func TestSocketOperationsInFlight(t *testing.T) {
	t.Parallel()
	const max, burst = 4, 20000
	s := apitest.Start(t, func(c *api.Config) { c.Streams.MaxInFlight = max })
	alice := s.CreateUser("alice")
	ws := s.Subscriber(alice.Token)

	sent := make(chan error, 1)
	go func() {
		for i := range burst {
			m := apitest.Message{ID: strconv.Itoa(i), Type: "subscribe", Payload: apitest.Body(apitest.FollowEventsSubscription, nil)}
			if err := ws.Send(m); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	refused, other := 0, 0
	for refused+other < burst-max {
		m, err := ws.Read()
		if err != nil {
			t.Fatalf("after %d refusals and %d other messages: %v", refused, other, err)
		}
		var errs []apitest.Error
		if m.Type == "error" && json.Unmarshal(m.Payload, &errs) == nil && len(errs) == 1 && errs[0].Extensions["code"] == api.CodeInFlightLimit {
			refused++
		} else {
			other++
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if refused != burst-max {
		t.Errorf("%d of %d subscribes refused with %s, %d other answers; want all but %d refused", refused, burst, api.CodeInFlightLimit, other, max)
	}

	// The first max run; once one ends, its place is free again.
	if a, err := operate(ws, "q", `{ viewer { name } }`, nil); err != nil || a.code() != api.CodeInFlightLimit {
		t.Errorf("a query while %d subscriptions run%s %v; want %s", max, a, err, api.CodeInFlightLimit)
	}
	ws.Send(apitest.Message{ID: "0", Type: "complete"})
	for m, err := ws.Read(); !(m.Type == "complete" && m.ID == "0"); m, err = ws.Read() {
		if err != nil {
			t.Fatal(err)
		}
	}
	var me struct{ Viewer struct{ Name string } }
	a, err := operate(ws, "q", `{ viewer { name } }`, nil)
	dataOf(t, a, err, &me)

}

// Finding 3: a query over a socket has the request deadline, as over
// HTTP; a subscription has none, but each of its events is resolved
// within one.
func TestSocketOperationDeadline(t *testing.T) {
	t.Parallel()
	// Loaders that wait longer than the request may run.
	slow := apitest.Start(t, func(c *api.Config) {
		c.RequestTimeout = 50 * time.Millisecond
		c.BatchWait = 400 * time.Millisecond
	})
	slow.Store.LoadSample(context.Background())
	viewer, err := slow.Store.CreateUser(context.Background(), "viewer")
	if err != nil {
		t.Fatal(err)
	}
	token, _ := mint(t, slow, strconv.FormatInt(viewer.ID, 10), time.Hour)
	sws := slow.Subscriber(token)
	a, err := operate(sws, "1", `{ users { nodes { followers { nodes { name } } } } }`, nil)
	if err != nil || a.code() != "INTERNAL_SERVER_ERROR" || !strings.Contains(fmt.Sprint(a.responses), "timed out") {
		t.Errorf("a query over a socket past the request deadline: %s %v; want a timed-out error", a, err)
	}

	// Both events come, each with the error of its field that outwaited
	// the deadline.
	if err := sws.Send(apitest.Message{ID: "2", Type: "subscribe", Payload: apitest.Body(`subscription {
  followEvents { follower { name followers { nodes { name } } } } }`, nil)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the subscription starts from now
	for _, name := range []string{"alice", "bob"} {
		u, err := slow.Store.UserByName(context.Background(), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := slow.Store.Follow(context.Background(), u.ID, viewer.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		m, err := sws.Read()
		if err != nil || m.Type != "next" || m.ID != "2" || !strings.Contains(string(m.Payload), "timed out") {
			t.Fatalf("event %d: %s %s %s %v; want one with a timed-out field", i, m.Type, m.ID, m.Payload, err)
		}
	}
}

// Finding 9: a subscribe with the id of an operation still running closes
// the socket with 4409, as graphql-transport-ws requires; an id the
// client completed may be used again.
func TestSocketIDInUse(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	alice, bob := s.CreateUser("alice"), s.CreateUser("bob")

	ws := s.Subscriber(alice.Token)
	ws.Subscribe("b", "")
	ws.Send(apitest.Message{ID: "b", Type: "complete"})
	ws.Subscribe("b", "")
	s.Follow(bob, alice)
	m, err := ws.Read()
	for err == nil && m.Type == "complete" && m.ID == "b" {
		m, err = ws.Read() // the first b's end
	}
	if err != nil || m.Type != "next" || m.ID != "b" {
		t.Errorf("b, completed and subscribed again: %s %s %s %v; want bob's follow", m.Type, m.ID, m.Payload, err)
	}

	ws.Subscribe("a", "")
	ws.Subscribe("a", "")
	if code := closeOf(ws); code != api.CloseSubscriberExists {
		t.Errorf("a second subscribe of a running a: closed %d (0: still open), want %d", code, api.CloseSubscriberExists)
	}
}
