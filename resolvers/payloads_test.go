package resolvers_test

import (
	"testing"

	"follows/api/apitest"
	"follows/resolvers"
)

// A follow's payload carries the new edge of each list it joins, with the
// cursor that list gives it, so that a client cache can insert it without
// refetching; unfollow and block carry the ids a cache removes edges by.
func TestMutationPayloadsForCaches(t *testing.T) {
	t.Parallel()
	a := apitest.Start(t)
	u := a.Sample()
	alice, bob, dave := u["alice"], u["bob"], u["dave"]

	type edge struct {
		Cursor, FollowedAt   string
		Muted, Notifications *bool
		Node                 struct {
			ID                            string
			FollowerCount, FollowingCount int
		}
	}
	var f struct {
		Follow struct {
			FollowerEdge, FollowingEdge edge
		}
	}
	a.Data(dave.Token, `mutation($id: ID!) { follow(input: {userId: $id}) {
	  followerEdge { cursor followedAt muted notifications: notificationsEnabled node { id followerCount followingCount } }
	  followingEdge { cursor followedAt node { id followerCount followingCount } } } }`,
		map[string]any{"id": alice.ID}, &f)
	fe, ge := f.Follow.FollowerEdge, f.Follow.FollowingEdge
	if fe.Node.ID != dave.ID || fe.Node.FollowingCount != 1 || ge.Node.ID != alice.ID || ge.Node.FollowerCount != 2 {
		t.Errorf("edges: follower %+v, following %+v; want dave following 1, alice with 2 followers", fe.Node, ge.Node)
	}
	if fe.FollowedAt == "" || fe.FollowedAt != ge.FollowedAt {
		t.Errorf("followedAt %q and %q", fe.FollowedAt, ge.FollowedAt)
	}
	if fe.Muted == nil || *fe.Muted || fe.Notifications == nil || !*fe.Notifications {
		t.Errorf("the viewer's own follow: muted %v, notificationsEnabled %v", fe.Muted, fe.Notifications)
	}

	// The cursors are those the lists give the same edges: paging on from
	// them gives the rest of each list.
	var lists struct {
		Alice struct {
			Followers struct {
				Edges []struct {
					Cursor string
					Node   struct{ Name string }
				}
			}
		}
		Dave struct {
			Following struct {
				Edges []struct{ Cursor string }
			}
		}
	}
	a.Data("", `query($a: ID, $d: ID) { alice: user(id: $a) { followers { edges { cursor node { name } } } }
	  dave: user(id: $d) { following { edges { cursor } } } }`, map[string]any{"a": alice.ID, "d": dave.ID}, &lists)
	if es := lists.Alice.Followers.Edges; len(es) != 2 || es[0].Cursor != fe.Cursor || es[1].Node.Name != "bob" {
		t.Errorf("alice's followers %+v; want dave first with cursor %s, then bob", es, fe.Cursor)
	}
	if es := lists.Dave.Following.Edges; len(es) != 1 || es[0].Cursor != ge.Cursor {
		t.Errorf("dave's following %+v; want one edge with cursor %s", es, ge.Cursor)
	}
	var rest struct {
		User struct {
			Followers struct{ Nodes []struct{ Name string } }
		}
	}
	a.Data("", `query($a: ID, $c: String) { user(id: $a) { followers(after: $c) { nodes { name } } } }`,
		map[string]any{"a": alice.ID, "c": fe.Cursor}, &rest)
	if n := rest.User.Followers.Nodes; len(n) != 1 || n[0].Name != "bob" {
		t.Errorf("alice's followers after the new edge's cursor: %v, want [bob]", n)
	}

	// Following again gives the same edges, with the original cursor.
	var again struct {
		Follow struct {
			AlreadyFollowing bool
			FollowerEdge     struct{ Cursor string }
		}
	}
	a.Data(dave.Token, `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing followerEdge { cursor } } }`,
		map[string]any{"id": alice.ID}, &again)
	if !again.Follow.AlreadyFollowing || again.Follow.FollowerEdge.Cursor != fe.Cursor {
		t.Errorf("following again: %+v, want the cursor %s", again.Follow, fe.Cursor)
	}

	var un struct {
		Unfollow struct {
			FollowerID, FolloweeID string
			WasFollowing           bool
		}
	}
	a.Data(dave.Token, `mutation($id: ID!) { unfollow(input: {userId: $id}) { followerId followeeId wasFollowing } }`,
		map[string]any{"id": alice.ID}, &un)
	if un.Unfollow.FollowerID != dave.ID || un.Unfollow.FolloweeID != alice.ID || !un.Unfollow.WasFollowing {
		t.Errorf("unfollow: %+v", un.Unfollow)
	}

	var bl struct {
		Block struct {
			BlockerID, BlockedID string
			RemovedFollows       int
		}
	}
	a.Data(alice.Token, `mutation($id: ID!) { block(input: {userId: $id}) { blockerId blockedId removedFollows } }`,
		map[string]any{"id": bob.ID}, &bl)
	if bl.Block.BlockerID != alice.ID || bl.Block.BlockedID != bob.ID || bl.Block.RemovedFollows != 2 {
		t.Errorf("block: %+v", bl.Block)
	}
}

// A taken name is the fault of input.name, and says so.
func TestTakenNameNamesTheArgument(t *testing.T) {
	t.Parallel()
	a := apitest.Start(t)
	a.CreateUser("alice")
	r := a.Do("", `mutation { createUser(input: {name: "ALICE"}) { token } }`, nil)
	if r.Code() != resolvers.CodeBadUserInput || r.Errors[0].Extensions["argument"] != "input.name" {
		t.Errorf("a taken name: %+v, want BAD_USER_INPUT with argument input.name", r.Errors)
	}
}
