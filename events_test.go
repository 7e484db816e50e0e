package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/db"
)

// A subscriber's server is killed with SIGKILL while events stream; the
// client reconnects with the last cursor it saw to another replica on
// the same database and receives every event exactly once, in order,
// while a writer on that replica keeps following.
func TestFollowEventsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	apitest.Each(t, func(t *testing.T, on apitest.Database) {
		bin := binary(t)
		dsn := on.NewDSN(t)
		// SQLite has no notifications: the replicas poll each other's
		// events.
		args := append(replicaArgs(dsn), "-events-poll", "50ms")
		doomed, doomedURL, _ := startProcess(t, bin, args...)
		_, otherURL, _ := startProcess(t, bin, args...)

		account := func(name string) apitest.Account {
			var out struct {
				Data struct {
					CreateUser struct {
						User  struct{ ID string }
						Token string
					}
				}
			}
			r := postVars(t, otherURL, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`, map[string]any{"n": name})
			b, _ := json.Marshal(r)
			json.Unmarshal(b, &out)
			if out.Data.CreateUser.Token == "" {
				t.Fatalf("createUser %s: %s", name, b)
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
			r := postVars(t, otherURL, a.Token, `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`, map[string]any{"id": star.ID})
			if r["errors"] != nil {
				t.Errorf("follow: %v", r["errors"])
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
		cursor := apitest.CursorAfter(first)

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
		killed := false
		for len(order) < fans-1 {
			m, err := ws.Read()
			if err != nil {
				if !killed {
					t.Fatalf("stream ended before the kill: %v", err)
				}
				// Reconnect to the other replica with the last cursor.
				ws = subscribe(otherURL)
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
				doomed.Process.Kill() // SIGKILL: no shutdown, no close frame
				killed = true
			}
		}
		<-writing
		if !killed {
			t.Fatal("the stream ended before the kill")
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
