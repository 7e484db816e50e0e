package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/auth"
	"follows/db"
	"follows/graph/model"
)

// resumeError subscribes the token's viewer to its follow events after
// the cursor and returns the code and argument of the error the
// subscription ends with; it fails the test on an event.
func resumeError(t *testing.T, s *apitest.Server, token, cursor string) (code, argument string) {
	t.Helper()
	// A resume that is not refused waits for events: the read's deadline
	// ends the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ws, err := apitest.DialSocket(ctx, t, apitest.WebsocketURL(s.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Init(map[string]any{"Authorization": "Bearer " + token}); err != nil {
		t.Fatal(err)
	}
	ws.Subscribe("1", cursor)
	m, err := ws.Read()
	if err != nil {
		t.Errorf("no refusal: %v", err)
		return "", ""
	}
	var errs []apitest.Error
	switch m.Type {
	case "error":
		err = json.Unmarshal(m.Payload, &errs)
	case "next":
		var r struct{ Errors []apitest.Error }
		err = json.Unmarshal(m.Payload, &r)
		errs = r.Errors
	}
	if err != nil || len(errs) == 0 {
		t.Fatalf("got %s %s, want an error", m.Type, m.Payload)
	}
	code, _ = errs[0].Extensions["code"].(string)
	argument, _ = errs[0].Extensions["argument"].(string)
	return code, argument
}

// TestEventCursorsAreSigned: a followEvents cursor resumes only the
// stream of the viewer the server made it for. One of the unsigned form
// earlier versions sent, which anyone could make for any position, is
// refused as expired (the client subscribes again without one); one
// signed under another secret, or made for another viewer, is not a
// cursor at all.
func TestEventCursorsAreSigned(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		s := d.Start(t)
		ann, bob, cat := s.CreateUser("ann"), s.CreateUser("bob"), s.CreateUser("cat")
		s.Follow(bob, ann)
		s.Follow(cat, bob)
		other, err := auth.NewTokens([]byte("another secret, of 32 bytes or more"), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		annID, _ := model.ParseUserID(ann.ID)
		for _, c := range []struct {
			name, cursor, code string
		}{
			{"unsigned, of an earlier version", model.EncodeCursor(model.ListFollowEvents, db.Cursor{At: time.Unix(0, 0), ID: 1}), "CURSOR_EXPIRED"},
			{"signed under another secret", model.EncodeEventCursor(other, annID, 1), "BAD_USER_INPUT"},
			{"bob's", apitest.CursorAfter(bob, 1), "BAD_USER_INPUT"},
			{"not a cursor", "bm90IGEgY3Vyc29y", "BAD_USER_INPUT"},
		} {
			if code, arg := resumeError(t, s, ann.Token, c.cursor); code != c.code || arg != "after" {
				t.Errorf("a cursor %s: got %s (argument %q), want %s (after)", c.name, code, arg, c.code)
			}
		}
		// Her own cursor resumes: she hears bob's follow, after the first
		// event.
		ws := s.Subscriber(ann.Token)
		ws.Subscribe("1", apitest.CursorAfter(ann, 0))
		if e := ws.Next(); e.String() != "FOLLOWED bob->ann" {
			t.Errorf("resumed with %s", e)
		}
	})
}

// TestResumesPastTheReplayCap: while a viewer has as many resumes
// replaying as it may (two; here held open on the server's store), one
// more is refused as REPLAY_LIMIT; once one ends, the same resume
// replays.
func TestResumesPastTheReplayCap(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		s := d.Start(t)
		ann, bob := s.CreateUser("ann"), s.CreateUser("bob")
		s.Follow(bob, ann)
		annID, _ := model.ParseUserID(ann.ID)
		from := int64(0)
		var held []*db.EventStream
		for range 2 {
			es, err := s.Store.OpenFollowEvents(t.Context(), annID, &from)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, es)
		}
		if code, _ := resumeError(t, s, ann.Token, apitest.CursorAfter(ann, 0)); code != "REPLAY_LIMIT" {
			t.Errorf("a third resume of ann's at once: %q, want REPLAY_LIMIT", code)
		}
		held[0].Close()
		ws := s.Subscriber(ann.Token)
		ws.Subscribe("1", apitest.CursorAfter(ann, 0))
		if e := ws.Next(); e.String() != "FOLLOWED bob->ann" {
			t.Errorf("resumed with %s", e)
		}
		held[1].Close()
	})
}
