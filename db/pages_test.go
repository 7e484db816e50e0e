package db

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// tiedStar makes a user, star, and 55 others: each follows star and star
// follows each, and each follows back, so that star's followers,
// following and mutual follows all hold the 55. Their follows are written
// with times four at a time equal, so that pages of 10 end inside runs of
// ties. It returns star's id and its lists' ids, newest first.
func tiedStar(t *testing.T, s *Store) (star int64, want []int64) {
	t.Helper()
	ctx := context.Background()
	u, err := s.CreateUser(ctx, "star")
	if err != nil {
		t.Fatal(err)
	}
	star = u.ID
	base := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	type entry struct {
		id int64
		at time.Time
	}
	var entries []entry
	for i := range 55 {
		f, err := s.CreateUser(ctx, fmt.Sprintf("fan%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i/4) * time.Second)
		for _, pair := range [][2]int64{{f.ID, star}, {star, f.ID}} {
			if _, err := s.rawExec(`INSERT INTO Follows (FollowerId, FolloweeId, CreatedAt) VALUES (?, ?, ?)`,
				pair[0], pair[1], s.d.timeArg(at)); err != nil {
				t.Fatal(err)
			}
		}
		entries = append(entries, entry{f.ID, at})
	}
	// Newest first; ties by the other user's id, descending.
	slices.SortFunc(entries, func(a, b entry) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return int(b.id - a.id)
	})
	for _, e := range entries {
		want = append(want, e.id)
	}
	return star, want
}

func ids(edges []Edge) []int64 {
	out := make([]int64, len(edges))
	for i, e := range edges {
		out[i] = e.User.ID
	}
	return out
}

func cursorOf(e Edge) Cursor { return Cursor{At: e.At, ID: e.User.ID} }

// pager reads pages of one list.
type pager func(ctx context.Context, qs []PageQuery) ([]Page, error)

func (s *Store) listPager(kind listKind) pager {
	return func(ctx context.Context, qs []PageQuery) ([]Page, error) { return s.pages(ctx, kind, qs, nil) }
}

func onePage(t *testing.T, list pager, q PageQuery) Page {
	t.Helper()
	p, err := list(context.Background(), []PageQuery{q})
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	return p[0]
}

// walk pages through a user's list n at a time: forward from its start
// with First and After, or backward from its end with Last and Before,
// the Relay way. It returns the edges in the list's order, and the size
// of each page in the order read.
func walk(t *testing.T, list pager, user int64, n int, backward bool) (edges []Edge, sizes []int) {
	t.Helper()
	q := PageQuery{User: user, First: n}
	if backward {
		q = PageQuery{User: user, Backward: true, Last: n}
	}
	for {
		if len(sizes) > 60 {
			t.Fatal("more pages than entries")
		}
		p := onePage(t, list, q)
		sizes = append(sizes, len(p.Edges))
		if len(p.Edges) > n {
			t.Fatalf("%+v: a page of %d", q, len(p.Edges))
		}
		if backward {
			if p.HasNext {
				t.Errorf("%+v: a backward page says what follows it", q)
			}
			edges = append(slices.Clone(p.Edges), edges...)
			if !p.HasPrevious {
				return edges, sizes
			}
			q.Before = cursorOf(p.Edges[0])
			continue
		}
		if p.HasPrevious {
			t.Errorf("%+v: a forward page says what precedes it", q)
		}
		edges = append(edges, p.Edges...)
		if !p.HasNext {
			return edges, sizes
		}
		q.After = cursorOf(p.Edges[len(p.Edges)-1])
	}
}

// Paging backward from the end of a list gives the edges that paging
// forward gives, in the same order, newest first, with no gap and no
// duplicate, where pages end inside runs of equal times too; and the pages
// are cut from the end, the newest one short.
func testPagingBothWays(t *testing.T, open opener) {
	s := open(t)
	star, want := tiedStar(t, s)
	for kind, name := range map[listKind]string{listFollowers: "followers", listFollowing: "following", listMutual: "mutual"} {
		list := s.listPager(kind)
		fwd, fwdSizes := walk(t, list, star, 10, false)
		bwd, bwdSizes := walk(t, list, star, 10, true)
		if !slices.Equal(ids(fwd), want) {
			t.Errorf("%s forward:\n%v\nwant\n%v", name, ids(fwd), want)
		}
		if !slices.Equal(ids(bwd), want) {
			t.Errorf("%s backward:\n%v\nwant\n%v", name, ids(bwd), want)
		}
		if want := []int{10, 10, 10, 10, 10, 5}; !slices.Equal(fwdSizes, want) || !slices.Equal(bwdSizes, want) {
			t.Errorf("%s page sizes: forward %v, backward %v; want %v each way", name, fwdSizes, bwdSizes, want)
		}
		if slices.IndexFunc(bwd, func(e Edge) bool { return !slices.Contains(fwd, e) }) >= 0 {
			t.Errorf("%s: the edges differ between the ways (times or users)", name)
		}
	}
}

// A page between two cursors holds the entries strictly between them:
// First takes those nearest after, Last those nearest before, and the
// flag of the side read toward tells whether more lie between.
func testPagingBetweenCursors(t *testing.T, open opener) {
	s := open(t)
	star, want := tiedStar(t, s)
	list := s.listPager(listFollowers)
	all := onePage(t, list, PageQuery{User: star, First: 100}).Edges
	after, before := cursorOf(all[5]), cursorOf(all[30]) // 24 entries between
	for _, c := range []struct {
		q         PageQuery
		want      []int64
		more      bool
		direction string
	}{
		{PageQuery{After: after, Before: before, First: 10}, want[6:16], true, "forward"},
		{PageQuery{After: after, Before: before, First: 24}, want[6:30], false, "forward"},
		{PageQuery{After: after, Before: before, First: 0}, nil, true, "forward"},
		{PageQuery{After: after, Before: before, Backward: true, Last: 10}, want[20:30], true, "backward"},
		{PageQuery{After: after, Before: before, Backward: true, Last: 30}, want[6:30], false, "backward"},
		{PageQuery{After: after, Before: before, Backward: true, Last: 0}, nil, true, "backward"},
		{PageQuery{Before: before, First: 3}, want[:3], true, "forward"},
		{PageQuery{After: after, Backward: true, Last: 3}, want[52:], true, "backward"},
		{PageQuery{Before: cursorOf(all[0]), Backward: true, Last: 10}, nil, false, "backward"},
		{PageQuery{After: cursorOf(all[54]), First: 10}, nil, false, "forward"},
	} {
		c.q.User = star
		p := onePage(t, list, c.q)
		more := p.HasNext
		if c.q.Backward {
			more = p.HasPrevious
		}
		if !slices.Equal(ids(p.Edges), c.want) || more != c.more {
			t.Errorf("%+v: %v, more %v; want %v, more %v", c.q, ids(p.Edges), more, c.want, c.more)
		}
	}
}

// One batch of forward and backward pages, with and without cursors, of
// many users, answers each as it is answered alone.
func testBatchMixesWays(t *testing.T, open opener) {
	s := open(t)
	star, _ := tiedStar(t, s)
	all := onePage(t, s.listPager(listFollowing), PageQuery{User: star, First: 100}).Edges
	mid := cursorOf(all[20])
	var qs []PageQuery
	for _, user := range []int64{star, all[0].User.ID, all[1].User.ID} {
		qs = append(qs,
			PageQuery{User: user, First: 3},
			PageQuery{User: user, Backward: true, Last: 3},
			PageQuery{User: user, After: mid, First: 7},
			PageQuery{User: user, Before: mid, Backward: true, Last: 7},
			PageQuery{User: user, After: cursorOf(all[2]), Before: mid, Backward: true, Last: 50})
	}
	batch := followingAsAlone(t, s, qs)
	if got := ids(batch[3].Edges); !slices.Equal(got, ids(all[13:20])) {
		t.Errorf("the 7 before the 21st: %v, want %v", got, ids(all[13:20]))
	}
}

// Query.users pages by id either way, leaving out deactivated users.
func testUsersPageBothWays(t *testing.T, open opener) {
	s := open(t)
	ctx := context.Background()
	var want []int64
	for i := range 25 {
		u, err := s.CreateUser(ctx, fmt.Sprintf("user%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 2 {
			if _, _, err := s.SetDeactivated(ctx, u.ID, true); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want = append(want, u.ID)
	}
	users := func(ctx context.Context, qs []PageQuery) ([]Page, error) {
		p, err := s.UsersPage(ctx, qs[0])
		return []Page{p}, err
	}
	// A users cursor holds an id alone.
	cursor := func(e Edge) Cursor { return Cursor{ID: e.User.ID} }
	var fwd, bwd []int64
	var sizes []int
	for q := (PageQuery{First: 7}); ; {
		p := onePage(t, users, q)
		fwd = append(fwd, ids(p.Edges)...)
		if !p.HasNext {
			break
		}
		q.After = cursor(p.Edges[len(p.Edges)-1])
	}
	for q := (PageQuery{Backward: true, Last: 7}); ; {
		p := onePage(t, users, q)
		bwd = append(ids(p.Edges), bwd...)
		sizes = append(sizes, len(p.Edges))
		if !p.HasPrevious {
			break
		}
		q.Before = cursor(p.Edges[0])
	}
	if !slices.Equal(fwd, want) || !slices.Equal(bwd, want) {
		t.Errorf("users forward %v, backward %v; want %v both ways", fwd, bwd, want)
	}
	if !slices.Equal(sizes, []int{7, 7, 6}) {
		t.Errorf("backward page sizes %v, want [7 7 6]", sizes)
	}
	between := onePage(t, users, PageQuery{After: Cursor{ID: want[3]}, Before: Cursor{ID: want[9]}, Backward: true, Last: 2})
	if got := ids(between.Edges); !slices.Equal(got, want[7:9]) || !between.HasPrevious {
		t.Errorf("last 2 between the 4th and the 10th: %v (more: %v), want %v (more)", got, between.HasPrevious, want[7:9])
	}
}

// followingAsAlone asks for pages of following lists in one batch, and
// each alone, and fails the test where the two differ. It returns the
// batch's pages.
func followingAsAlone(t *testing.T, s *Store, qs []PageQuery) []Page {
	t.Helper()
	ctx := context.Background()
	batch, err := s.FollowPages(ctx, Following, qs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		one, err := s.FollowPages(ctx, Following, []PageQuery{q}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(one[0]) != fmt.Sprint(batch[i]) {
			t.Errorf("query %+v: batch gave %v, alone %v", q, batch[i], one[0])
		}
	}
	return batch
}
