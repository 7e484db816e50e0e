package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/db"
)

// replica is one instance of the server on a database others share: the
// handler over a store of its own, its events polled often, as the
// server's -events-poll sets (SQLite has no notifications).
type replica struct {
	*httptest.Server
	mu    sync.Mutex
	conns []net.Conn
}

// newReplica starts a replica on dsn; with oidc, it also takes the
// tokens of that provider, as the server does given -oidc-issuer and the
// rest, its accounts kept in the replica's store.
func newReplica(t *testing.T, dsn string, oidc *auth.OIDCConfig) *replica {
	t.Helper()
	store, err := db.Open(context.Background(), dsn, db.WithEvents(db.EventsConfig{Poll: 50 * time.Millisecond, Retention: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tokens, err := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if oidc != nil {
		oidc.Accounts, oidc.Log = store, log
		if err := tokens.AcceptProvider(context.Background(), *oidc); err != nil {
			t.Fatal(err)
		}
	}
	cfg := api.DefaultConfig()
	cfg.SignupRate, cfg.MutationRate = api.Rate{}, api.Rate{}
	r := &replica{Server: httptest.NewUnstartedServer(api.NewHandler(store, tokens, cfg, log, api.NewMetrics("")))}
	// Every connection is kept, websockets (which the server forgets once
	// hijacked) included, so that kill can cut them all.
	r.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
		}
	}
	r.Start()
	t.Cleanup(r.kill)
	return r
}

// kill ends the replica as SIGKILL would for its clients: it stops
// listening and cuts every connection, sending nothing.
func (r *replica) kill() {
	r.Listener.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

// A subscriber's replica dies while events stream, its connections cut
// with no close frame; the client reconnects with the last cursor it saw
// to another replica on the same database and receives every event
// exactly once, in order, while a writer on that replica keeps following.
// (The root package's tests kill whole processes under load.)
func TestFollowEventsSurviveAReplica(t *testing.T) {
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		dsn := on.NewDSN(t)
		doomed, other := newReplica(t, dsn, nil), newReplica(t, dsn, nil)
		doomedURL, otherURL := doomed.URL, other.URL

		account := func(name string) apitest.Account {
			var out struct {
				Data struct {
					CreateUser struct {
						User  struct{ ID string }
						Token string
					}
				}
			}
			apitest.PostTo(t, otherURL, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`, map[string]any{"n": name}, &out)
			if out.Data.CreateUser.Token == "" {
				t.Fatalf("createUser %s: no token", name)
			}
			return apitest.Account{ID: out.Data.CreateUser.User.ID, Name: name, Token: out.Data.CreateUser.Token}
		}
		star := account("star")
		const fans = 200
		accounts := make([]apitest.Account, fans)
		for i := range accounts {
			accounts[i] = account(fmt.Sprintf("fan%03d", i))
		}
		follow := func(a apitest.Account) {
			var r apitest.Response
			apitest.PostTo(t, otherURL, a.Token, `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`, map[string]any{"id": star.ID}, &r)
			if r.Errors != nil {
				t.Errorf("follow: %v", r.Errors)
			}
		}
		// The stream starts after the first follow, whose outbox Id the
		// test reads from the database.
		follow(accounts[0])
		store, err := db.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		first, err := store.LastEventID(t.Context())
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		cursor := apitest.CursorAfter(star, first)

		writing := make(chan struct{})
		go func() {
			defer close(writing)
			for _, a := range accounts[1:] {
				follow(a)
			}
		}()

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		subscribe := func(url string) *apitest.Socket {
			ws, err := apitest.DialSocket(ctx, t, apitest.WebsocketURL(url), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ws.Init(map[string]any{"Authorization": "Bearer " + star.Token}); err != nil {
				t.Fatal(err)
			}
			ws.Subscribe("1", cursor)
			return ws
		}
		heard := map[string]int{}
		var order []string
		ws := subscribe(doomedURL)
		killed, reconnected := false, false
		for len(order) < fans-1 {
			m, err := ws.Read()
			if err != nil {
				if !killed {
					t.Fatalf("stream ended before the kill: %v", err)
				}
				// Reconnect to the other replica with the last cursor.
				ws = subscribe(otherURL)
				reconnected = true
				continue
			}
			if m.Type != "next" {
				t.Fatalf("got %s %s", m.Type, m.Payload)
			}
			var r struct {
				Data struct{ FollowEvents apitest.FollowEvent }
			}
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				t.Fatal(err)
			}
			e := r.Data.FollowEvents
			heard[e.Follower.Name]++
			order = append(order, e.Follower.Name)
			cursor = e.Cursor
			if len(order) == fans/4 && !killed {
				doomed.kill() // no shutdown, no close frame
				killed = true
			}
		}
		<-writing
		if !killed || !reconnected {
			t.Fatalf("killed %v, reconnected %v: the stream did not outlive its replica", killed, reconnected)
		}
		for i, name := range order {
			if want := accounts[i+1].Name; name != want {
				t.Fatalf("event %d is %s's follow, want %s's (order %s)", i, name, want, strings.Join(order, " "))
			}
		}
		for name, n := range heard {
			if n != 1 {
				t.Errorf("%s's follow heard %d times", name, n)
			}
		}
	})
}
