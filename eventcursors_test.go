package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/auth"
	"follows/graph/model"
)

// TestEventResumeWindow: the server signs event cursors with its secret,
// so a cursor made under the same secret elsewhere (another instance;
// here the test) resumes on it; with -events-replay 3, a cursor more than
// three events back is refused as CURSOR_EXPIRED, naming the argument,
// and one within replays what came after it.
func TestEventResumeWindow(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "follows.db")
	_, url, _ := startProcess(t, "-addr", "127.0.0.1:0", "-db", dbPath, "-secret", testSecret, "-events-replay", "3")
	account := func(name string) apitest.Account {
		t.Helper()
		var out struct {
			Data struct {
				CreateUser struct {
					User  struct{ ID string }
					Token string
				}
			}
		}
		apitest.PostTo(t, url, "", `mutation($n: String!) { createUser(input: {name: $n}) { user { id } token } }`, map[string]any{"n": name}, &out)
		return apitest.Account{ID: out.Data.CreateUser.User.ID, Name: name, Token: out.Data.CreateUser.Token}
	}
	ann, bob := account("ann"), account("bob")
	for _, m := range []string{"follow", "unfollow", "follow", "unfollow", "follow"} { // events 1 to 5
		var r apitest.Response
		apitest.PostTo(t, url, bob.Token, `mutation($id: ID!) { `+m+`(input: {userId: $id}) { __typename } }`, map[string]any{"id": ann.ID}, &r)
		if r.Errors != nil {
			t.Fatalf("%s: %v", m, r.Errors)
		}
	}
	tokens, err := auth.NewTokens([]byte(testSecret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	annID, _ := model.ParseUserID(ann.ID)
	subscribe := func(after int64) apitest.Message {
		t.Helper()
		ws, err := apitest.DialSocket(t.Context(), t, apitest.WebsocketURL(url), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.Init(map[string]any{"Authorization": "Bearer " + ann.Token}); err != nil {
			t.Fatal(err)
		}
		ws.Subscribe("1", model.EncodeEventCursor(tokens, annID, after))
		m, err := ws.Read()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := subscribe(1)
	var errs []apitest.Error
	if m.Type == "next" {
		var r struct{ Errors []apitest.Error }
		json.Unmarshal(m.Payload, &r)
		errs = r.Errors
	} else {
		json.Unmarshal(m.Payload, &errs)
	}
	if len(errs) == 0 || errs[0].Extensions["code"] != "CURSOR_EXPIRED" || errs[0].Extensions["argument"] != "after" {
		t.Errorf("a resume four events back: %s %s, want CURSOR_EXPIRED on after", m.Type, m.Payload)
	}
	m = subscribe(2)
	var r struct {
		Data   struct{ FollowEvents apitest.FollowEvent }
		Errors []apitest.Error
	}
	if err := json.Unmarshal(m.Payload, &r); err != nil || m.Type != "next" || r.Errors != nil || r.Data.FollowEvents.String() != "FOLLOWED bob->ann" {
		t.Errorf("a resume three events back: %s %s, want FOLLOWED bob->ann (event 3)", m.Type, m.Payload)
	}
}
