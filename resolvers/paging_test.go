package resolvers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/resolvers"
)

// pageOut is a connection's page as these tests read it.
type pageOut struct {
	Edges []struct {
		Cursor string
		Node   struct{ Name string }
	}
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
	TotalCount int
}

func (p pageOut) names() []string {
	out := []string{}
	for _, e := range p.Edges {
		out = append(out, e.Node.Name)
	}
	return out
}

// starWithFans makes a user followed by n others, in order, and returns it
// with its followers' names newest first.
func starWithFans(s *apitest.Server, n int) (apitest.Account, []string) {
	star := s.CreateUser("star")
	var names []string
	for i := range n {
		fan := s.CreateUser(fmt.Sprintf("fan%02d", i))
		s.Follow(fan, star)
		names = append([]string{fan.Name}, names...)
	}
	return star, names
}

const followersPage = `query($id: ID, $first: Int, $after: String, $last: Int, $before: String) {
  user(id: $id) { followers(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } } }`

func followers(s *apitest.Server, vars map[string]any) pageOut {
	var out struct{ User struct{ Followers pageOut } }
	s.Data("", followersPage, vars, &out)
	return out.User.Followers
}

// A client pages a list backward from its end with last and before, as
// Relay's loadPrevious does, and gets what paging forward gets: every
// follower once, newest first, the pages cut from the end. pageInfo is
// the spec's: hasPreviousPage tells whether more lie before the first
// edge, hasNextPage whether before was given, and the page's cursors are
// its first and last edges'.
func TestPagingBackwardOverHTTP(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testPagingBackwardOverHTTP)
}

func testPagingBackwardOverHTTP(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	star, want := starWithFans(s, 55)
	var got []string
	var sizes []int
	var before any
	for page := 0; ; page++ {
		if page == 7 {
			t.Fatal("no first page after 7 pages of 10")
		}
		// Relay sends the other direction's arguments as null.
		f := followers(s, map[string]any{"id": star.ID, "first": nil, "after": nil, "last": 10, "before": before})
		if f.TotalCount != 55 {
			t.Errorf("totalCount = %d, want 55", f.TotalCount)
		}
		if f.PageInfo.HasNextPage != (before != nil) {
			t.Errorf("page %d: hasNextPage = %v, want whether before was given", page, f.PageInfo.HasNextPage)
		}
		if n := len(f.Edges); n == 0 || *f.PageInfo.StartCursor != f.Edges[0].Cursor || *f.PageInfo.EndCursor != f.Edges[n-1].Cursor {
			t.Fatalf("page %d: %d edges, pageInfo %+v: not the first and last edges' cursors", page, n, f.PageInfo)
		}
		got = append(f.names(), got...)
		sizes = append(sizes, len(f.Edges))
		if !f.PageInfo.HasPreviousPage {
			break
		}
		before = *f.PageInfo.StartCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged backward\n%v\nwant each once, newest first\n%v", got, want)
	}
	if !slices.Equal(sizes, []int{10, 10, 10, 10, 10, 5}) {
		t.Errorf("backward page sizes %v, want 10s from the end and the newest 5 last", sizes)
	}

	// The default page size goes whichever way is asked: last alone is
	// the oldest 10, before alone the 20 before it, neither the newest 20.
	oldest := followers(s, map[string]any{"id": star.ID, "last": 10})
	if !slices.Equal(oldest.names(), want[45:]) || !oldest.PageInfo.HasPreviousPage || oldest.PageInfo.HasNextPage {
		t.Errorf("last: 10 = %v, %+v; want the oldest 10, more before, none after", oldest.names(), oldest.PageInfo)
	}
	if f := followers(s, map[string]any{"id": star.ID, "before": *oldest.PageInfo.StartCursor}); !slices.Equal(f.names(), want[25:45]) {
		t.Errorf("before alone = %v, want the 20 before the oldest 10", f.names())
	}
	if f := followers(s, map[string]any{"id": star.ID}); !slices.Equal(f.names(), want[:20]) || f.PageInfo.HasPreviousPage || !f.PageInfo.HasNextPage {
		t.Errorf("no arguments = %v, %+v; want the newest 20, more after", f.names(), f.PageInfo)
	}

	// Back and forth: the page before a forward page ends where it began.
	second := followers(s, map[string]any{"id": star.ID, "first": 10, "after": *followers(s, map[string]any{"id": star.ID, "first": 10}).PageInfo.EndCursor})
	back := followers(s, map[string]any{"id": star.ID, "last": 10, "before": *second.PageInfo.StartCursor})
	if !slices.Equal(back.names(), want[:10]) || back.PageInfo.HasPreviousPage || !back.PageInfo.HasNextPage {
		t.Errorf("the page before the second = %v, %+v; want the first 10, none before", back.names(), back.PageInfo)
	}

	// Between two cursors: the entries strictly between, from either end.
	between := map[string]any{"id": star.ID, "after": *second.PageInfo.StartCursor, "before": *second.PageInfo.EndCursor}
	for arg, want := range map[string][]string{"first": want[11:14], "last": want[16:19]} {
		vars := map[string]any{arg: 3}
		for k, v := range between {
			vars[k] = v
		}
		if f := followers(s, vars); !slices.Equal(f.names(), want) {
			t.Errorf("%s: 3 between the second page's ends = %v, want %v", arg, f.names(), want)
		}
	}
}

// Query.users pages by id both ways.
func TestUsersPageBackwardOverHTTP(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testUsersPageBackwardOverHTTP)
}

func testUsersPageBackwardOverHTTP(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	var want []string
	for i := range 7 {
		want = append(want, s.CreateUser(fmt.Sprintf("user%d", i)).Name)
	}
	const query = `query($last: Int, $before: String) { users(last: $last, before: $before) {
	  edges { node { name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount } }`
	var got []string
	var before any
	for range 5 {
		var out struct{ Users pageOut }
		s.Data("", query, map[string]any{"last": 3, "before": before}, &out)
		got = append(out.Users.names(), got...)
		if !out.Users.PageInfo.HasPreviousPage {
			break
		}
		before = *out.Users.PageInfo.StartCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("users backward = %v, want %v", got, want)
	}
}

// Giving both first and last is refused, as the Relay spec advises; last
// is bounded as first is, and before must be a cursor of the list.
func TestBackwardArgumentsChecked(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	star, _ := starWithFans(s, 3)
	for _, c := range []struct {
		vars     map[string]any
		argument string
	}{
		{map[string]any{"first": 2, "last": 2}, "last"},
		{map[string]any{"last": 101}, "last"},
		{map[string]any{"last": -1, "before": nil}, "last"},
		{map[string]any{"last": 2, "before": "not a cursor"}, "before"},
		{map[string]any{"first": 500, "before": nil}, "first"},
	} {
		c.vars["id"] = star.ID
		r := s.Do("", followersPage, c.vars)
		if r.Code() != resolvers.CodeBadUserInput || r.Errors[0].Extensions["argument"] != c.argument ||
			!strings.HasPrefix(r.Errors[0].Message, c.argument+": ") {
			t.Errorf("%v: %+v, want BAD_USER_INPUT naming %s", c.vars, r.Errors, c.argument)
		}
	}
	// Another list's cursor is not this list's.
	fan := s.CreateUser("fan")
	s.Follow(fan, star)
	var out struct{ User struct{ Following pageOut } }
	s.Data("", `query($id: ID) { user(id: $id) { following(first: 1) { pageInfo { startCursor } } } }`, map[string]any{"id": fan.ID}, &out)
	if r := s.Do("", followersPage, map[string]any{"id": star.ID, "last": 1, "before": *out.User.Following.PageInfo.StartCursor}); r.Code() != resolvers.CodeBadUserInput {
		t.Errorf("a following cursor as followers' before: %+v, want BAD_USER_INPUT", r.Errors)
	}
}

// Backward pages batch as forward ones do: the followers of fifty users,
// each asked forward and backward, cost the same statements as of five,
// one each way; prefetch reads last and before as the resolvers do, so
// that the whole list is one loader batch.
func TestBackwardPagesBatch(t *testing.T) { apitest.Each(t, testBackwardPagesBatch) }

func testBackwardPagesBatch(t *testing.T, on apitest.Database) {
	s := on.Start(t, steadyBatches)
	followRing(s, 50, 5)
	counts := map[string]int{}
	for _, c := range []struct {
		name, lists string
	}{
		{"forward", `followers(first: 2) { nodes { name } }`},
		{"backward", `followers(last: 2) { nodes { name } }`},
		{"both", `newest: followers(first: 2) { nodes { name } } oldest: followers(last: 2) { nodes { name } }`},
	} {
		for _, n := range []int{5, 50} {
			query := `query($n: Int) { users(first: $n) { nodes { name ` + c.lists + ` } } }`
			batches, keys := s.LoaderBatches("followers")
			r := s.Data("", query, map[string]any{"n": n}, &struct{}{})
			b, k := s.LoaderBatches("followers")
			if want := n * strings.Count(c.lists, "followers"); b-batches != 1 || k-keys != want {
				t.Errorf("%s, %d users: %d followers batches of %d keys in all, want one of %d", c.name, n, b-batches, k-keys, want)
			}
			counts[fmt.Sprint(c.name, n)] = r.Extensions.Debug.SQLQueries
		}
		if counts[c.name+"5"] != counts[c.name+"50"] {
			t.Errorf("%s: %d statements for 5 users, %d for 50; want the same", c.name, counts[c.name+"5"], counts[c.name+"50"])
		}
	}
	// The users page, then the followers pages: one statement each way.
	if counts["forward50"] != counts["backward50"] || counts["both50"] != counts["forward50"]+1 {
		t.Errorf("statements: forward %d, backward %d, both %d; want backward as forward, both one more",
			counts["forward50"], counts["backward50"], counts["both50"])
	}
}

// followRing makes n users, each following the k after it in a ring.
func followRing(s *apitest.Server, n, k int) []apitest.Account {
	var accounts []apitest.Account
	for i := range n {
		accounts = append(accounts, s.CreateUser(fmt.Sprintf("user%02d", i)))
	}
	for i, a := range accounts {
		for j := 1; j <= k; j++ {
			s.Follow(a, accounts[(i+j)%n])
		}
	}
	return accounts
}
