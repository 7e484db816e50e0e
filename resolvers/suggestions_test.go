package resolvers_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"follows/api/apitest"
	"follows/db"
)

// A viewer whose followees' following counts pass the budget gets, over
// HTTP, the ranking of its newest follows that fit, every suggestion
// saying `sampled: true`; one within it gets every follow counted and
// `sampled: false`. The graph: big follows 49,998 users (u00003 on),
// small follows three of them; sampler follows big, then small (49,998 +
// 3 > 50,000: big, the older, is left out), whole follows small alone.
func TestSuggestionsSayWhenSampled(t *testing.T) {
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		t.Parallel()
		s := d.Start(t)
		const users = 50_000
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		userRows := func(yield func(db.UserRow, error) bool) {
			for id := int64(1); id <= users; id++ {
				if !yield(db.UserRow{ID: id, Name: fmt.Sprintf("u%05d", id)}, nil) {
					return
				}
			}
		}
		followRows := func(yield func(db.FollowRow, error) bool) {
			for id := int64(3); id <= users; id++ {
				if !yield(db.FollowRow{Follower: 1, Followee: id, At: at}, nil) {
					return
				}
			}
			for id := int64(3); id <= 5; id++ {
				if !yield(db.FollowRow{Follower: 2, Followee: id, At: at}, nil) {
					return
				}
			}
		}
		if _, err := s.Store.Import(context.Background(), iter.Seq2[db.UserRow, error](userRows), iter.Seq2[db.FollowRow, error](followRows), 0, nil); err != nil {
			t.Fatal(err)
		}
		big, small := apitest.Account{ID: "1"}, apitest.Account{ID: "2"}
		sampler, whole := s.CreateUser("sampler"), s.CreateUser("whole")
		s.Follow(sampler, big)
		s.Follow(sampler, small)
		s.Follow(whole, small)
		for _, c := range []struct {
			viewer  apitest.Account
			sampled bool
		}{{sampler, true}, {whole, false}} {
			var out struct {
				Viewer struct {
					Suggestions []struct {
						User    struct{ Name string }
						Via     int
						Sampled bool
					}
				}
			}
			s.Data(c.viewer.Token, `{ viewer { suggestions { user { name } via sampled } } }`, nil, &out)
			var got []string
			for _, sg := range out.Viewer.Suggestions {
				got = append(got, fmt.Sprintf("%s:%d:%v", sg.User.Name, sg.Via, sg.Sampled))
			}
			want := []string{fmt.Sprintf("u00003:1:%v", c.sampled), fmt.Sprintf("u00004:1:%v", c.sampled), fmt.Sprintf("u00005:1:%v", c.sampled)}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s's suggestions = %v, want %v", c.viewer.Name, got, want)
			}
		}
	})
}

// Suggestions that show only their users' ids and names read, once the
// server holds those names and the followees' lists, no user's row: one
// statement fewer than those that show a count, which read the rows and
// show the counts as they are, whatever the server holds, asked for
// directly or through a fragment. A user deactivated meanwhile drops out
// of both.
func TestBriefSuggestionsReadNoRows(t *testing.T) {
	apitest.Each(t, func(t *testing.T, d apitest.Database) {
		t.Parallel()
		s := d.Start(t, steadyBatches)
		viewer, a, b := s.CreateUser("viewer"), s.CreateUser("a"), s.CreateUser("b")
		x, y, fan := s.CreateUser("x"), s.CreateUser("y"), s.CreateUser("fan")
		s.Follow(viewer, a)
		s.Follow(viewer, b)
		s.Follow(a, x)
		s.Follow(b, x)
		s.Follow(a, y)
		type suggestions struct {
			Viewer struct {
				Suggestions []struct {
					Via  int
					User struct {
						ID, Name      string
						FollowerCount *int
					}
				}
			}
		}
		ask := func(query string) (string, int) {
			t.Helper()
			var out suggestions
			r := s.Data(viewer.Token, query, nil, &out)
			var got []string
			for _, sg := range out.Viewer.Suggestions {
				e := fmt.Sprintf("%s(%s):%d", sg.User.Name, sg.User.ID, sg.Via)
				if sg.User.FollowerCount != nil {
					e += fmt.Sprintf(" followers %d", *sg.User.FollowerCount)
				}
				got = append(got, e)
			}
			return strings.Join(got, ", "), r.Extensions.Debug.SQLQueries
		}
		const brief = `{ viewer { suggestions { via user { __typename id name } } } }`
		const counted = `{ viewer { suggestions { via user { id name followerCount } } } }`
		const fragment = `{ viewer { suggestions { via user { ...U } } } } fragment U on User { id name followerCount }`
		ask(brief) // reads the names, and holds them
		got, briefStatements := ask(brief)
		if want := fmt.Sprintf("x(%s):2, y(%s):1", x.ID, y.ID); got != want {
			t.Errorf("brief suggestions = %s, want %s", got, want)
		}
		s.Follow(fan, x)
		for _, q := range []string{counted, fragment} {
			got, statements := ask(q)
			if want := fmt.Sprintf("x(%s):2 followers 3, y(%s):1 followers 1", x.ID, y.ID); got != want {
				t.Errorf("%s = %s, want %s", q, got, want)
			}
			if statements != briefStatements+1 {
				t.Errorf("%s: %d statements, brief %d; want one more", q, statements, briefStatements)
			}
		}
		var out struct{ DeactivateAccount struct{ Deactivated bool } }
		s.Data(y.Token, `mutation { deactivateAccount { deactivated } }`, nil, &out)
		if got, _ := ask(brief); got != fmt.Sprintf("x(%s):2", x.ID) {
			t.Errorf("after y deactivated, brief suggestions = %s, want x alone", got)
		}
	})
}
