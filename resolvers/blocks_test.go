package resolvers_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/auth"
)

// profile is what the block and deactivation test reads of a user.
type profile struct {
	FollowerCount, FollowingCount int
	Followers, Following          struct {
		Edges []struct {
			FollowedAt string
			Node       struct{ Name string }
		}
	}
	MutualFollows struct{ Nodes []struct{ Name string } }
}

const profileQuery = `query($name: String) { user(name: $name) { followerCount followingCount
  followers(first: 100) { edges { followedAt node { name } } }
  following(first: 100) { edges { followedAt node { name } } }
  mutualFollows { nodes { name } } } }`

func profileOf(t *testing.T, s *apitest.Server, token, name string) *profile {
	t.Helper()
	var out struct{ User *profile }
	s.Data(token, profileQuery, map[string]any{"name": name}, &out)
	return out.User
}

// suggestion is an entry of a user's suggestions.
type suggestion struct {
	User struct{ Name string }
	Via  int
}

// suggestionsOf reads a user's suggestions, as only the user may.
func suggestionsOf(t *testing.T, s *apitest.Server, a apitest.Account) []suggestion {
	t.Helper()
	var out struct {
		Viewer struct{ Suggestions []suggestion }
	}
	s.Data(a.Token, `{ viewer { suggestions { user { name } via } } }`, nil, &out)
	return out.Viewer.Suggestions
}

func edgeNames(p *profile, following bool) []string {
	edges := p.Followers.Edges
	if following {
		edges = p.Following.Edges
	}
	out := []string{}
	for _, e := range edges {
		out = append(out, e.Node.Name)
	}
	return out
}

// The acceptance, step by step over HTTP, with the counts checked
// against a recount after each step.
func TestBlocksAndDeactivation(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testBlocksAndDeactivation)
}

func testBlocksAndDeactivation(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	u := s.Sample()
	c := blockCast{s: s, alice: u["alice"], bob: u["bob"], carol: u["carol"]}

	c.blockRemovesFollows(t)
	c.blockHidesTheBlocker(t)
	c.unblockAllowsFollowsAgain(t)

	// Back to the sample graph's follows; now carol deactivates, then
	// comes back.
	before := map[string]*profile{}
	for _, name := range []string{"alice", "bob", "dave"} {
		before[name] = profileOf(t, s, "", name)
	}
	c.deactivationHidesTheUser(t)
	c.reactivationRestores(t, before)
}

// blockCast is the sample graph's server and the three users the block and
// deactivation steps act on; the steps run in order, each on the graph the
// one before left.
type blockCast struct {
	s                 *apitest.Server
	alice, bob, carol apitest.Account
}

// blockRemovesFollows: alice blocks bob, and both follows between them go;
// blocking again changes nothing, and neither may follow the other.
func (c blockCast) blockRemovesFollows(t *testing.T) {
	s, alice, bob := c.s, c.alice, c.bob
	block := `mutation($id: ID!) { block(input: {userId: $id}) { blocker { name followerCount } blocked { name } alreadyBlocked removedFollows } }`
	var b struct {
		Block struct {
			Blocker struct {
				Name          string
				FollowerCount int
			}
			AlreadyBlocked bool
			RemovedFollows int
		}
	}
	s.Data(alice.Token, block, map[string]any{"id": bob.ID}, &b)
	if b.Block.RemovedFollows != 2 || b.Block.AlreadyBlocked || b.Block.Blocker.FollowerCount != 0 {
		t.Errorf("block = %+v, want 2 follows removed, alice left with 0 followers", b.Block)
	}
	s.CheckGraph()
	s.Data(alice.Token, block, map[string]any{"id": bob.ID}, &b)
	if !b.Block.AlreadyBlocked || b.Block.RemovedFollows != 0 {
		t.Errorf("second block = %+v, want alreadyBlocked", b.Block)
	}
	if r := s.Do(bob.Token, apitest.FollowMutation, map[string]any{"id": alice.ID}); r.Code() != "FORBIDDEN" {
		t.Errorf("bob follows alice while blocked: %+v, want FORBIDDEN", r.Errors)
	}
	if r := s.Do(alice.Token, apitest.FollowMutation, map[string]any{"id": bob.ID}); r.Code() != "FORBIDDEN" {
		t.Errorf("alice follows bob while blocking him: %+v, want FORBIDDEN", r.Errors)
	}
	a := profileOf(t, s, "", "alice")
	if a.FollowerCount != 0 || len(a.MutualFollows.Nodes) != 0 {
		t.Errorf("alice after the block: %d followers, mutual %v; want 0 and none", a.FollowerCount, a.MutualFollows.Nodes)
	}
}

// blockHidesTheBlocker: while alice blocks bob, bob's suggestions never
// name her, each sees the block from their side, and only alice reads her
// blocked list.
func (c blockCast) blockHidesTheBlocker(t *testing.T) {
	s, alice, bob, carol := c.s, c.alice, c.bob, c.carol
	// bob follows dave, who is followed by carol whom alice follows: bob's
	// suggestions must not name alice, whatever the graph.
	s.Follow(bob, carol)
	for _, sg := range suggestionsOf(t, s, bob) {
		if sg.User.Name == "alice" {
			t.Errorf("bob's suggestions include alice, who blocks him")
		}
	}
	var flags struct {
		User struct{ ViewerBlocks, BlocksViewer bool }
	}
	s.Data(alice.Token, `query($id: ID) { user(id: $id) { viewerBlocks blocksViewer } }`, map[string]any{"id": bob.ID}, &flags)
	if !flags.User.ViewerBlocks || flags.User.BlocksViewer {
		t.Errorf("alice looking at bob: %+v, want viewerBlocks only", flags.User)
	}
	var blocked struct {
		User struct {
			Blocked struct {
				Nodes      []struct{ Name string }
				TotalCount int
			}
		}
	}
	s.Data(alice.Token, `query($id: ID) { user(id: $id) { blocked { nodes { name } totalCount } } }`, map[string]any{"id": alice.ID}, &blocked)
	if len(blocked.User.Blocked.Nodes) != 1 || blocked.User.Blocked.Nodes[0].Name != "bob" || blocked.User.Blocked.TotalCount != 1 {
		t.Errorf("alice's blocked list = %+v, want [bob]", blocked.User.Blocked)
	}
	if r := s.Do(bob.Token, `query($id: ID) { user(id: $id) { blocked { totalCount } } }`, map[string]any{"id": alice.ID}); r.Code() != "FORBIDDEN" {
		t.Errorf("bob reading alice's blocked list: %+v, want FORBIDDEN", r.Errors)
	}
	s.Do(bob.Token, `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing } }`, map[string]any{"id": carol.ID})
}

// unblockAllowsFollowsAgain: alice unblocks bob, and the two follow each
// other again, as in the sample graph.
func (c blockCast) unblockAllowsFollowsAgain(t *testing.T) {
	s, alice, bob := c.s, c.alice, c.bob
	unblock := `mutation($id: ID!) { unblock(input: {userId: $id}) { wasBlocked } }`
	var ub struct{ Unblock struct{ WasBlocked bool } }
	s.Data(alice.Token, unblock, map[string]any{"id": bob.ID}, &ub)
	if !ub.Unblock.WasBlocked {
		t.Error("unblock: wasBlocked false")
	}
	s.Follow(bob, alice)
	s.Follow(alice, bob)
	s.CheckGraph()
}

// deactivationHidesTheUser: carol deactivates, and leaves every count,
// list and suggestion; others no longer find her, she still sees herself,
// and she may follow no one, nor anyone her.
func (c blockCast) deactivationHidesTheUser(t *testing.T) {
	s, alice, carol := c.s, c.alice, c.carol
	var d struct {
		DeactivateAccount struct {
			User        struct{ Name string }
			Deactivated bool
		}
	}
	s.Data(carol.Token, `mutation { deactivateAccount { user { name } deactivated } }`, nil, &d)
	if !d.DeactivateAccount.Deactivated {
		t.Fatal("deactivateAccount: deactivated false")
	}
	s.CheckGraph()
	a, dv := profileOf(t, s, "", "alice"), profileOf(t, s, "", "dave")
	if a.FollowingCount != 1 || dv.FollowerCount != 1 {
		t.Errorf("after carol left: alice follows %d, dave has %d followers; want 1 and 1", a.FollowingCount, dv.FollowerCount)
	}
	if got := edgeNames(a, true); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("alice's following after carol left = %v, want [bob]", got)
	}
	if sg := suggestionsOf(t, s, alice); len(sg) != 1 || sg[0].User.Name != "dave" || sg[0].Via != 1 {
		t.Errorf("alice's suggestions after carol left = %+v, want dave via 1", sg)
	}
	if r := s.Do("", `{ user(name: "carol") { id } }`, nil); string(r.Data) != `{"user":null}` {
		t.Errorf("user(name: carol) for others = %s, want null", r.Data)
	}
	if r := s.Do(carol.Token, `{ user(name: "carol") { name } viewer { name } }`, nil); string(r.Data) != `{"user":{"name":"carol"},"viewer":{"name":"carol"}}` {
		t.Errorf("carol looking at herself = %s", r.Data)
	}
	if r := s.Do(alice.Token, apitest.FollowMutation, map[string]any{"id": carol.ID}); r.Code() != "NOT_FOUND" {
		t.Errorf("following carol while deactivated: %+v, want NOT_FOUND", r.Errors)
	}
	if r := s.Do(carol.Token, apitest.FollowMutation, map[string]any{"id": alice.ID}); r.Code() != "FORBIDDEN" {
		t.Errorf("carol following while deactivated: %+v, want FORBIDDEN", r.Errors)
	}
	var users struct{ Users struct{ TotalCount int } }
	s.Data("", `{ users { totalCount } }`, nil, &users)
	if users.Users.TotalCount != 3 {
		t.Errorf("users.totalCount with carol deactivated = %d, want 3", users.Users.TotalCount)
	}
}

// reactivationRestores: carol reactivates, and the profiles read before
// she left are as they were, follow dates included.
func (c blockCast) reactivationRestores(t *testing.T, before map[string]*profile) {
	s := c.s
	s.Data(c.carol.Token, `mutation { reactivateAccount { deactivated } }`, nil, &struct{}{})
	s.CheckGraph()
	for name, was := range before {
		now := profileOf(t, s, "", name)
		wasJSON, _ := json.Marshal(was)
		nowJSON, _ := json.Marshal(now)
		if string(wasJSON) != string(nowJSON) {
			t.Errorf("%s after carol came back:\n%s\nwant as before:\n%s", name, nowJSON, wasJSON)
		}
	}
}

// Only the follower sees a follow's mute and notification settings.
func TestMutesArePrivate(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testMutesArePrivate)
}

func testMutesArePrivate(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	u := s.Sample()
	alice, bob, carol := u["alice"], u["bob"], u["carol"]
	var upd struct {
		UpdateFollow struct {
			Followee struct{ Name string }
		}
	}
	s.Data(alice.Token, `mutation($id: ID!) { updateFollow(input: {userId: $id, muted: true, notificationsEnabled: false}) { followee { name } } }`,
		map[string]any{"id": bob.ID}, &upd)
	if upd.UpdateFollow.Followee.Name != "bob" {
		t.Errorf("updateFollow = %+v", upd)
	}
	if r := s.Do(alice.Token, `mutation($id: ID!) { updateFollow(input: {userId: $id, muted: true}) { followedAt } }`, map[string]any{"id": u["dave"].ID}); r.Code() != "NOT_FOUND" {
		t.Errorf("updateFollow of a user not followed: %+v, want NOT_FOUND", r.Errors)
	}
	q := `query($id: ID) { user(id: $id) { following { edges { node { name } muted notificationsEnabled } } } }`
	type edges struct {
		User struct {
			Following struct {
				Edges []struct {
					Node                        struct{ Name string }
					Muted, NotificationsEnabled *bool
				}
			}
		}
	}
	var own, others edges
	s.Data(alice.Token, q, map[string]any{"id": alice.ID}, &own)
	for _, e := range own.User.Following.Edges {
		if e.Muted == nil || e.NotificationsEnabled == nil {
			t.Fatalf("alice's own following edge to %s hides its settings", e.Node.Name)
		}
		wantMuted := e.Node.Name == "bob"
		if *e.Muted != wantMuted || *e.NotificationsEnabled == wantMuted {
			t.Errorf("alice -> %s: muted %v, notifications %v", e.Node.Name, *e.Muted, *e.NotificationsEnabled)
		}
	}
	for _, token := range []string{"", carol.Token, bob.Token} {
		s.Data(token, q, map[string]any{"id": alice.ID}, &others)
		for _, e := range others.User.Following.Edges {
			if e.Muted != nil || e.NotificationsEnabled != nil {
				t.Errorf("someone other than alice sees her settings for %s", e.Node.Name)
			}
		}
	}
}

// A page of users asking whether the viewer blocks each and each the
// viewer costs one statement for both fields, the check of the viewer's
// token included: the lookup reads the viewer's stamp beside the blocks.
// The answers stay each user's own, and a token whose account has a new
// stamp sees no block, as an anonymous request would.
func TestBlockFieldsCostOneStatementPerPage(t *testing.T) {
	apitest.Each(t, testBlockFieldsCostOneStatementPerPage)
}

func testBlockFieldsCostOneStatementPerPage(t *testing.T, on apitest.Database) {
	s := on.Start(t, steadyBatches)
	accounts := followRing(s, 50, 1)
	me := accounts[0]
	block := `mutation($id: ID!) { block(input: {userId: $id}) { alreadyBlocked } }`
	s.Data(me.Token, block, map[string]any{"id": accounts[7].ID}, &struct{}{})
	s.Data(accounts[9].Token, block, map[string]any{"id": me.ID}, &struct{}{})

	page := `{ users(first: 50) { nodes { name%s } } }`
	base := s.Data(me.Token, fmt.Sprintf(page, ""), nil, &struct{}{}).Extensions.Debug.SQLQueries
	var out struct {
		Users struct {
			Nodes []struct {
				Name                       string
				ViewerBlocks, BlocksViewer bool
			}
		}
	}
	r := s.Data(me.Token, fmt.Sprintf(page, " viewerBlocks blocksViewer"), nil, &out)
	if got := r.Extensions.Debug.SQLQueries; got > base+1 {
		t.Errorf("viewerBlocks and blocksViewer on 50 users: %d statements, %d without them; want at most one more", got, base)
	}
	if len(out.Users.Nodes) != 50 {
		t.Fatalf("%d users, want 50", len(out.Users.Nodes))
	}
	for _, n := range out.Users.Nodes {
		want := [2]bool{n.Name == "user07", n.Name == "user09"}
		if got := [2]bool{n.ViewerBlocks, n.BlocksViewer}; got != want {
			t.Errorf("%s: viewerBlocks, blocksViewer = %v, want %v", n.Name, got, want)
		}
	}

	// One user's two fields are one key: one statement.
	one := `query($id: ID) { user(id: $id) { name%s } }`
	vars := map[string]any{"id": accounts[9].ID}
	base = s.Data(me.Token, fmt.Sprintf(one, ""), vars, &struct{}{}).Extensions.Debug.SQLQueries
	r = s.Data(me.Token, fmt.Sprintf(one, " viewerBlocks blocksViewer"), vars, &struct{}{})
	if got := r.Extensions.Debug.SQLQueries; got > base+1 || string(r.Data) != `{"user":{"name":"user09","viewerBlocks":false,"blocksViewer":true}}` {
		t.Errorf("one user's block fields: %s in %d statements, %d without them; want blocksViewer only, at most one more", r.Data, got, base)
	}

	// A token for the viewer's id with another stamp sees no block.
	tokens, err := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stale := tokens.Mint(mustID(t, me.ID), "0123456789abcdef0123456789abcdef")
	r = s.Do(stale, fmt.Sprintf(one, " viewerBlocks blocksViewer"), vars)
	if string(r.Data) != `{"user":{"name":"user09","viewerBlocks":false,"blocksViewer":false}}` || len(r.Errors) > 0 {
		t.Errorf("block fields with a stale token = %s %+v, want false and false", r.Data, r.Errors)
	}
}
