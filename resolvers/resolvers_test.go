package resolvers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/db"
)

func nodeNames(nodes []struct{ Name string }) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func TestSampleGraphOverHTTP(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testSampleGraphOverHTTP)
}

func testSampleGraphOverHTTP(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	u := s.Sample()

	var alice struct {
		User struct {
			FollowerCount, FollowingCount int
			MutualFollows                 struct{ Nodes []struct{ Name string } }
			Suggestions                   []struct {
				User struct{ Name string }
				Via  int
			}
		}
	}
	s.Data(u["alice"].Token, `{ user(name: "alice") { followerCount followingCount
	  mutualFollows { nodes { name } } suggestions { user { name } via } } }`, nil, &alice)
	if alice.User.FollowerCount != 1 || alice.User.FollowingCount != 2 {
		t.Errorf("alice counts = %d followers, %d following; want 1, 2", alice.User.FollowerCount, alice.User.FollowingCount)
	}
	if got := nodeNames(alice.User.MutualFollows.Nodes); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("alice.mutualFollows = %v, want [bob]", got)
	}
	if s := alice.User.Suggestions; len(s) != 1 || s[0].User.Name != "dave" || s[0].Via != 2 {
		t.Errorf("alice.suggestions = %+v, want [{dave 2}]", s)
	}
	// Only alice may read them: which accounts are missing from someone's
	// suggestions would tell whom they block or are blocked by.
	for _, token := range []string{"", u["bob"].Token} {
		r := s.Do(token, `{ user(name: "alice") { name suggestions { via } } }`, nil)
		if r.Code() != "FORBIDDEN" || r.Errors[0].Message != "only a user itself may see its suggestions" {
			t.Errorf("alice's suggestions read with token %.10q: %+v, want FORBIDDEN", token, r.Errors)
		}
	}

	var dave struct {
		User struct {
			Followers struct {
				Edges []struct {
					Node       struct{ Name string }
					FollowedAt string
				}
			}
		}
	}
	start := time.Now().Add(-time.Minute)
	s.Data("", `query($id: ID) { user(id: $id) { followers { edges { node { name } followedAt } } } }`,
		map[string]any{"id": u["dave"].ID}, &dave)
	var names []string
	for _, e := range dave.User.Followers.Edges {
		names = append(names, e.Node.Name)
		at, err := time.Parse(time.RFC3339Nano, e.FollowedAt)
		if err != nil || at.Before(start) || at.After(time.Now().Add(time.Minute)) || !strings.HasSuffix(e.FollowedAt, "Z") {
			t.Errorf("followedAt %q of %s is not a recent UTC time: %v", e.FollowedAt, e.Node.Name, err)
		}
	}
	if !slices.Equal(names, []string{"bob", "carol"}) {
		t.Errorf("dave.followers = %v, want [bob carol] (newest first)", names)
	}

	var del struct {
		DeleteUser struct {
			DeletedUserID  string
			DeletedFollows int
		}
	}
	s.Data(u["bob"].Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId deletedFollows } }`,
		map[string]any{"id": u["bob"].ID}, &del)
	if del.DeleteUser.DeletedFollows != 3 || del.DeleteUser.DeletedUserID != u["bob"].ID {
		t.Errorf("bob's delete = %+v, want 3 follows of id %s", del.DeleteUser, u["bob"].ID)
	}
	var left struct {
		Users struct {
			Nodes []struct {
				Name      string
				Following struct{ Nodes []struct{ Name string } }
			}
		}
	}
	s.Data("", `{ users { nodes { name following { nodes { name } } } } }`, nil, &left)
	var follows []string
	for _, n := range left.Users.Nodes {
		for _, f := range n.Following.Nodes {
			follows = append(follows, n.Name+"->"+f.Name)
		}
	}
	if !slices.Equal(follows, []string{"alice->carol", "carol->dave"}) {
		t.Errorf("follows after bob left = %v, want [alice->carol carol->dave]", follows)
	}
	if r := s.Do("", `{ user(name: "bob") { id } }`, nil); string(r.Data) != `{"user":null}` {
		t.Errorf("user(name: bob) after delete = %s, want null", r.Data)
	}
}

// When alice follows dave, the row says FollowerId = alice, and dave's
// followers hold alice, not the other way round.
func TestFollowDirection(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testFollowDirection)
}

func testFollowDirection(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	alice, dave := s.CreateUser("alice"), s.CreateUser("dave")
	out := s.Follow(alice, dave)
	if out.Follow.Follower.Name != "alice" || out.Follow.Followee.Name != "dave" || out.Follow.AlreadyFollowing {
		t.Errorf("follow payload = %+v", out.Follow)
	}
	states, err := s.Store.Follows(context.Background(), []db.Pair{
		{Follower: mustID(t, alice.ID), Followee: mustID(t, dave.ID)},
		{Follower: mustID(t, dave.ID), Followee: mustID(t, alice.ID)},
	})
	if err != nil || !states[0].Exists || states[1].Exists {
		t.Errorf("rows alice->dave, dave->alice = %+v, %v; want only the first", states, err)
	}
	// The payload's counts are read after the write.
	r := s.Do(alice.Token, `mutation($id: ID!) { unfollow(input: {userId: $id}) {
	  follower { followingCount } followee { followerCount } } }`, map[string]any{"id": dave.ID})
	if string(r.Data) != `{"unfollow":{"follower":{"followingCount":0},"followee":{"followerCount":0}}}` {
		t.Errorf("unfollow payload = %s %+v", r.Data, r.Errors)
	}
	r = s.Do(alice.Token, `mutation($id: ID!) { follow(input: {userId: $id}) {
	  follower { followingCount } followee { followerCount } } }`, map[string]any{"id": dave.ID})
	if string(r.Data) != `{"follow":{"follower":{"followingCount":1},"followee":{"followerCount":1}}}` {
		t.Errorf("follow payload = %s %+v", r.Data, r.Errors)
	}
	var got struct {
		Dave struct {
			Followers, Following struct{ Nodes []struct{ Name string } }
			FollowerCount        int
			ViewerFollows        bool
			FollowsViewer        bool
		}
	}
	s.Data(alice.Token, `query($id: ID) { dave: user(id: $id) { followerCount viewerFollows followsViewer
	  followers { nodes { name } } following { nodes { name } } } }`, map[string]any{"id": dave.ID}, &got)
	d := got.Dave
	if !slices.Equal(nodeNames(d.Followers.Nodes), []string{"alice"}) || len(d.Following.Nodes) != 0 ||
		d.FollowerCount != 1 || !d.ViewerFollows || d.FollowsViewer {
		t.Errorf("dave as alice sees him = %+v", d)
	}
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscan(s, &id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPagingFiftyFiveFollowers(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testPagingFiftyFiveFollowers)
}

func testPagingFiftyFiveFollowers(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	star := s.CreateUser("star")
	var want []string
	for i := range 55 {
		fan := s.CreateUser(fmt.Sprintf("fan%02d", i))
		s.Follow(fan, star)
		want = append(want, fan.Name)
	}
	slices.Reverse(want)

	var got []string
	var after any
	for page := 0; ; page++ {
		if page == 7 {
			t.Fatal("no last page after 7 pages of 10")
		}
		var out struct {
			User struct {
				Followers struct {
					Nodes    []struct{ Name string }
					PageInfo struct {
						HasNextPage, HasPreviousPage bool
						EndCursor                    *string
					}
					TotalCount int
				}
			}
		}
		s.Data("", `query($id: ID, $after: String) { user(id: $id) { followers(first: 10, after: $after) {
		  nodes { name } pageInfo { hasNextPage hasPreviousPage endCursor } totalCount } } }`,
			map[string]any{"id": star.ID, "after": after}, &out)
		f := out.User.Followers
		if f.TotalCount != 55 {
			t.Errorf("totalCount = %d, want 55", f.TotalCount)
		}
		if f.PageInfo.HasPreviousPage != (after != nil) {
			t.Errorf("page %d: hasPreviousPage = %v", page, f.PageInfo.HasPreviousPage)
		}
		got = append(got, nodeNames(f.Nodes)...)
		if !f.PageInfo.HasNextPage {
			if len(f.Nodes) != 5 {
				t.Errorf("last page has %d followers, want 5", len(f.Nodes))
			}
			break
		}
		after = *f.PageInfo.EndCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged followers\n%v\nwant each once, newest first\n%v", got, want)
	}
}

func TestMutationOutcomes(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testMutationOutcomes)
}

func testMutationOutcomes(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	u := s.Sample()
	alice, dave := u["alice"], u["dave"]
	tampered := alice.Token[:len(alice.Token)-3] + "AAA"
	// A token for alice, her stamp and all, signed with another secret.
	forgedFor := func(id string) string {
		found, err := s.Store.UsersByID(context.Background(), []int64{mustID(t, id)})
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := auth.NewTokens([]byte(strings.Repeat("not the secret ", 3)), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tokens.Mint(found[0].ID, found[0].SecurityStamp)
	}
	tests := []struct {
		name     string
		token    string
		query    string
		vars     map[string]any
		wantCode string
		check    func(t *testing.T, r apitest.Response)
	}{
		{name: "self-follow", token: alice.Token, query: apitest.FollowMutation, vars: map[string]any{"id": alice.ID},
			wantCode: "BAD_USER_INPUT", check: func(t *testing.T, r apitest.Response) {
				if !strings.Contains(r.Errors[0].Message, "cannot follow yourself") {
					t.Errorf("message %q", r.Errors[0].Message)
				}
			}},
		{name: "double follow", token: alice.Token, query: apitest.FollowMutation, vars: map[string]any{"id": u["bob"].ID},
			check: func(t *testing.T, r apitest.Response) {
				var out apitest.FollowResult
				json.Unmarshal(r.Data, &out)
				if !out.Follow.AlreadyFollowing || out.Follow.FollowedAt == "" {
					t.Errorf("second follow = %+v, want alreadyFollowing with the first time", out.Follow)
				}
			}},
		{name: "follow a user who does not exist", token: alice.Token, query: apitest.FollowMutation, vars: map[string]any{"id": "999999"}, wantCode: "NOT_FOUND"},
		{name: "follow an id that is no number", token: alice.Token, query: apitest.FollowMutation, vars: map[string]any{"id": "bob"}, wantCode: "BAD_USER_INPUT"},
		{name: "follow without token", query: apitest.FollowMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "follow with tampered token", token: tampered, query: apitest.FollowMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "follow with token of another secret", token: forgedFor(alice.ID), query: apitest.FollowMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "delete someone else", token: alice.Token, query: `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`,
			vars: map[string]any{"id": dave.ID}, wantCode: "FORBIDDEN"},
		{name: "unfollow not followed", token: dave.Token, query: `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing follower { name } followee { name } } }`,
			vars: map[string]any{"id": alice.ID}, check: func(t *testing.T, r apitest.Response) {
				if string(r.Data) != `{"unfollow":{"wasFollowing":false,"follower":{"name":"dave"},"followee":{"name":"alice"}}}` {
					t.Errorf("data = %s", r.Data)
				}
			}},
		{name: "name taken", query: `mutation { createUser(input: {name: "ALICE"}) { token } }`, wantCode: "BAD_USER_INPUT"},
		{name: "empty name", query: `mutation { createUser(input: {name: ""}) { token } }`, wantCode: "BAD_USER_INPUT"},
		{name: "name with a space", query: `mutation { createUser(input: {name: "a b"}) { token } }`, wantCode: "BAD_USER_INPUT"},
		{name: "user by id and name", query: `{ user(id: "1", name: "alice") { id } }`, wantCode: "BAD_USER_INPUT"},
		{name: "first too large", query: `{ users(first: 101) { totalCount } }`, wantCode: "BAD_USER_INPUT"},
		{name: "first negative", query: `{ user(name: "alice") { followers(first: -1) { totalCount } } }`, wantCode: "BAD_USER_INPUT"},
		{name: "garbage cursor", query: `{ user(name: "alice") { followers(after: "nonsense") { totalCount } } }`, wantCode: "BAD_USER_INPUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do(tc.token, tc.query, tc.vars)
			if r.Code() != tc.wantCode {
				t.Fatalf("code = %q, want %q (errors %+v)", r.Code(), tc.wantCode, r.Errors)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	// A deleted user's token stops working.
	s.Data(dave.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`, map[string]any{"id": dave.ID}, &struct{}{})
	if r := s.Do(dave.Token, apitest.FollowMutation, map[string]any{"id": alice.ID}); r.Code() != "UNAUTHENTICATED" {
		t.Errorf("deleted user's follow: code %q, want UNAUTHENTICATED", r.Code())
	}
	if r := s.Do(dave.Token, `{ viewer { id } }`, nil); string(r.Data) != `{"viewer":null}` {
		t.Errorf("deleted user's viewer = %s, want null", r.Data)
	}

	// A token signed with the server's secret for alice's id but another
	// account's stamp (as after her id was given to someone new) is a
	// deleted user's token: anonymous for queries, refused for mutations.
	tokens, err := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stale := tokens.Mint(mustID(t, alice.ID), "0123456789abcdef0123456789abcdef")
	r := s.Do(stale, apitest.FollowMutation, map[string]any{"id": u["carol"].ID})
	if r.Code() != "UNAUTHENTICATED" || r.Errors[0].Message != "the token's user no longer exists" {
		t.Errorf("follow with another account's stamp: %+v, want UNAUTHENTICATED, the user no longer exists", r.Errors)
	}
	r = s.Do(stale, `query($id: ID) { viewer { id } user(id: $id) { viewerFollows followsViewer } }`, map[string]any{"id": u["bob"].ID})
	if string(r.Data) != `{"viewer":null,"user":{"viewerFollows":false,"followsViewer":false}}` || len(r.Errors) > 0 {
		t.Errorf("queries with another account's stamp = %s %+v, want anonymous answers", r.Data, r.Errors)
	}
}

// A list of users each with counts and followers costs a fixed number of
// statements, the same for 5 users as for 50: never one per user.
// steadyBatches is for tests that count statements or batches. A loader's
// batch is the keys that arrive within its wait of the first; a list's
// prefetch sends them in one loop, which on a busy machine under the race
// detector can outlast the default 250 µs and split a batch in two. The
// shape such a test asserts is the server's, not the machine's, so the
// wait is long enough to hold any such loop: 3 ms split the two aliased
// lists of TestBackwardPagesBatch once on a two-core machine at a load
// average over 20, so it is 25 ms, which costs these tests well under a
// second each.
func steadyBatches(c *api.Config) { c.BatchWait = 25 * time.Millisecond }

func TestStatementsPerRequestDoNotGrowWithUsers(t *testing.T) {
	apitest.Each(t, testStatementsPerRequestDoNotGrowWithUsers)
}

func testStatementsPerRequestDoNotGrowWithUsers(t *testing.T, on apitest.Database) {
	s := on.Start(t, steadyBatches)
	accounts := followRing(s, 50, 12)
	query := `query($n: Int) { users(first: $n) { totalCount nodes { name followerCount followingCount
	  viewerFollows followers(first: 10) { totalCount nodes { name } } } } }`
	counts := map[int]int{}
	for _, n := range []int{5, 50} {
		var out struct {
			Users struct {
				Nodes []struct {
					Followers struct{ Nodes []struct{ Name string } }
				}
			}
		}
		r := s.Data(accounts[0].Token, query, map[string]any{"n": n}, &out)
		if len(out.Users.Nodes) != n || len(out.Users.Nodes[n-1].Followers.Nodes) != 10 {
			t.Fatalf("first %d users: got %d, the last with %d followers", n, len(out.Users.Nodes), len(out.Users.Nodes[n-1].Followers.Nodes))
		}
		counts[n] = r.Extensions.Debug.SQLQueries
	}
	// users, their total, the viewer (its token checked against its row),
	// viewerFollows, followers pages.
	if counts[50] > 5 || counts[50] != counts[5] {
		t.Errorf("SQL statements: %d for 5 users, %d for 50; want the same, at most 5", counts[5], counts[50])
	}

	// Asking each of the 50 whether the viewer blocks it, or it the viewer,
	// adds one statement for the whole page.
	withBlocks := strings.Replace(query, "viewerFollows", "viewerFollows viewerBlocks blocksViewer", 1)
	r := s.Data(accounts[0].Token, withBlocks, map[string]any{"n": 50}, &struct{}{})
	if got := r.Extensions.Debug.SQLQueries; got > counts[50]+1 {
		t.Errorf("viewerBlocks and blocksViewer on 50 users: %d statements, want at most %d", got, counts[50]+1)
	}

	// A profile with its 20 newest followers costs the same for a user
	// with 49 followers as for one with none.
	lonely := s.CreateUser("lonely")
	for _, a := range accounts[1:] {
		s.Follow(a, accounts[0])
	}
	profile := `query($id: ID) { user(id: $id) { name followerCount followingCount followers(first: 20) { nodes { name } } } }`
	for _, id := range []string{accounts[0].ID, lonely.ID} {
		r := s.Data("", profile, map[string]any{"id": id}, &struct{}{})
		if q := r.Extensions.Debug.SQLQueries; q > 4 || q < 1 {
			t.Errorf("profile of user %s: %d SQL statements, want 1 to 4", id, q)
		}
	}
}

// suggestions is priced at the work its bound allows, so that a client
// cannot make one request do many calls' worth: four fit the default
// complexity limit, five do not.
func TestSuggestionsPricedAsTheirWork(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	u := s.Sample()
	calls := func(n int) string {
		q := "{ viewer {"
		for i := range n {
			q += fmt.Sprintf(" s%d: suggestions { via }", i)
		}
		return q + " } }"
	}
	if r := s.Do(u["alice"].Token, calls(4), nil); len(r.Errors) > 0 {
		t.Errorf("four calls: %+v", r.Errors)
	}
	if r := s.Do(u["alice"].Token, calls(5), nil); r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("five calls: %+v, want COMPLEXITY_LIMIT_EXCEEDED", r.Errors)
	}
}
