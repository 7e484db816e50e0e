package resolvers_test

import (
	"context"
	"strconv"
	"testing"

	"follows/api/apitest"
	"follows/resolvers"
)

// A deactivated account may not follow, unfollow, change a follow, block
// or unblock until it reactivates, whoever it acts on: itself and users
// that do not exist included, which the store would answer otherwise.
func TestDeactivatedViewerIsRefused(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testDeactivatedViewerIsRefused)
}

func testDeactivatedViewerIsRefused(t *testing.T, on apitest.Database) {
	a := on.Start(t)
	ctx := context.Background()
	meAccount, otherAccount := a.CreateUser("me"), a.CreateUser("other")
	token := meAccount.Token
	me, _ := strconv.ParseInt(meAccount.ID, 10, 64)
	other, _ := strconv.ParseInt(otherAccount.ID, 10, 64)
	if _, err := a.Store.Follow(ctx, me, other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Store.SetDeactivated(ctx, me, true); err != nil {
		t.Fatal(err)
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, target := range []struct {
		name, id string
	}{
		{"another user", id(other)},
		{"itself", id(me)},
		{"a user that does not exist", "999"},
	} {
		for _, m := range []string{
			`mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`,
			`mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`,
			`mutation($id: ID!) { updateFollow(input: {userId: $id, muted: true}) { alreadyFollowing } }`,
			`mutation($id: ID!) { block(input: {userId: $id}) { alreadyBlocked } }`,
			`mutation($id: ID!) { unblock(input: {userId: $id}) { wasBlocked } }`,
		} {
			r := a.Do(token, m, map[string]any{"id": target.id})
			if len(r.Errors) != 1 {
				t.Errorf("%s on %s: errors %+v", m, target.name, r.Errors)
				continue
			}
			e := r.Errors[0]
			if e.Extensions["code"] != resolvers.CodeForbidden || e.Message != "your account is deactivated: reactivate it first" {
				t.Errorf("%s on %s: %v %q", m, target.name, e.Extensions["code"], e.Message)
			}
		}
	}
}
