package clients_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
)

// The graphql-ws client (npm) receives the follow events of a scripted
// sequence in order, with mutes, notification settings and blocks
// respected.
func TestGraphQLWSClientFollowEvents(t *testing.T) {
	nodeTools(t, "graphql-ws", "ws")
	s := apitest.Start(t)
	u := map[string]apitest.Account{}
	for _, n := range []string{"ann", "bob", "cat", "dan", "eve", "mal"} {
		u[n] = s.CreateUser(n)
	}
	do := func(who, query, whom string, extra map[string]any) {
		t.Helper()
		vars := map[string]any{"id": u[whom].ID}
		for k, v := range extra {
			vars[k] = v
		}
		if r := s.Do(u[who].Token, query, vars); len(r.Errors) > 0 {
			t.Fatalf("%s: %+v", query, r.Errors)
		}
	}
	const (
		follow   = `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`
		unfollow = `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`
		block    = `mutation($id: ID!) { block(input: {userId: $id}) { alreadyBlocked } }`
		update   = `mutation($id: ID!, $m: Boolean, $n: Boolean) {
  updateFollow(input: {userId: $id, muted: $m, notificationsEnabled: $n}) { alreadyFollowing } }`
	)
	do("ann", follow, "bob", nil) // notifications on by default
	do("ann", follow, "cat", nil)
	do("ann", update, "cat", map[string]any{"m": true})
	do("ann", follow, "dan", nil)
	do("ann", update, "dan", map[string]any{"n": false})
	do("mal", follow, "ann", nil)

	// The stream starts after the newest event now, so that none of the
	// script below is lost to the client's start.
	after := s.EventCursor(u["ann"])
	cmd := exec.CommandContext(t.Context(), "node", "events.mjs", apitest.WebsocketURL(s.URL), u["ann"].Token, after, "4")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	do("bob", follow, "eve", nil)   // heard: ann follows bob with notifications on
	do("cat", follow, "eve", nil)   // muted: not heard
	do("dan", follow, "eve", nil)   // notifications off: not heard
	do("eve", follow, "ann", nil)   // heard: ann is the followee
	do("ann", block, "mal", nil)    // removes mal->ann: not announced
	do("bob", follow, "mal", nil)   // involves mal, whom ann blocks: not heard
	do("bob", unfollow, "eve", nil) // followers hear FOLLOWED only
	do("eve", unfollow, "ann", nil) // heard
	do("ann", follow, "eve", nil)   // ann's own action: not echoed
	do("dan", follow, "ann", nil)   // heard

	dec := json.NewDecoder(stdout)
	var got []string
	for {
		var e apitest.FollowEvent
		if err := dec.Decode(&e); err != nil {
			break
		}
		got = append(got, e.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("events.mjs: %v\n%s", err, stderr.String())
	}
	want := []string{"FOLLOWED bob->eve", "FOLLOWED eve->ann", "UNFOLLOWED eve->ann", "FOLLOWED dan->ann"}
	if !slices.Equal(got, want) {
		t.Errorf("the graphql-ws client received %q, want %q", got, want)
	}
}
