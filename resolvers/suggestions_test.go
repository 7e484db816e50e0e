package resolvers_test

import (
	"context"
	"fmt"
	"iter"
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
