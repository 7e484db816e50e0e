package db

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A batch of lists reads the users along with it (Along) as UsersByID
// would: in the order asked, a missing user nil, a deactivated one with
// its flag, each with its counts and stamp; the lists' own answers are
// those of a batch without them. On a dialect that can, the users cost
// no statement: the batch is as many statements as without them.
func TestUsersReadAlong(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		id := users(t, s, "viewer", "a", "b", "x", "gone")
		for _, f := range [][2]string{{"viewer", "a"}, {"viewer", "b"}, {"a", "viewer"}, {"a", "x"}, {"b", "x"}, {"x", "viewer"}} {
			if _, err := s.Follow(ctx, id[f[0]], id[f[1]]); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.SetDeactivated(ctx, id["gone"], true); err != nil {
			t.Fatal(err)
		}
		ids := []int64{id["viewer"], 1 << 30, id["gone"], id["a"]}
		want, err := s.UsersByID(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		wantUsers := describeUsers(want)
		if !strings.Contains(wantUsers, "deactivated") || !strings.Contains(wantUsers, "nil") {
			t.Fatalf("UsersByID = %s: the test needs a deactivated and a missing user", wantUsers)
		}
		// PostgreSQL reads them in the batch's statement; the others in
		// one of their own.
		_, rides := s.d.(userRider)
		if rides != (s.d.name() == "postgres") {
			t.Fatalf("%s reads users along in the batch's statement: %v", s.d.name(), rides)
		}
		pages := []PageQuery{{User: id["viewer"], First: 10}, {User: id["x"], Last: 1}}
		for _, c := range []struct {
			call string
			read func(ctx context.Context, along *Along) (string, error)
		}{
			{"followers", func(ctx context.Context, along *Along) (string, error) {
				p, err := s.FollowPages(ctx, Followers, pages, along)
				return fmt.Sprint(p), err
			}},
			{"mutual follows", func(ctx context.Context, along *Along) (string, error) {
				p, err := s.MutualPages(ctx, pages[:1], along)
				return fmt.Sprint(p), err
			}},
			{"suggestions", func(ctx context.Context, along *Along) (string, error) {
				p, err := s.Suggestions(ctx, []SuggestionQuery{{User: id["viewer"], First: 10}}, along)
				return fmt.Sprint(p), err
			}},
		} {
			alone, _ := WithStats(ctx)
			wantList, err := c.read(alone, nil) // also holds what suggestions hold
			if err != nil {
				t.Fatal(err)
			}
			alone, st := WithStats(ctx)
			if _, err := c.read(alone, nil); err != nil {
				t.Fatal(err)
			}
			with, stWith := WithStats(ctx)
			along := &Along{IDs: ids}
			got, err := c.read(with, along)
			if err != nil {
				t.Fatalf("%s with users along: %v", c.call, err)
			}
			if got != wantList {
				t.Errorf("%s with users along = %s, want %s", c.call, got, wantList)
			}
			if g := describeUsers(along.Users); g != wantUsers {
				t.Errorf("%s: users along = %s, want %s", c.call, g, wantUsers)
			}
			more := int64(1)
			if rides {
				more = 0
			}
			if stWith.Queries() != st.Queries()+more {
				t.Errorf("%s: %d statements with users along, %d without; want %d more", c.call, stWith.Queries(), st.Queries(), more)
			}
		}
	})
}

func describeUsers(us []*User) string {
	var out []string
	for _, u := range us {
		if u == nil {
			out = append(out, "nil")
			continue
		}
		d := fmt.Sprintf("%d %s %d/%d", u.ID, u.Name, u.FollowerCount, u.FollowingCount)
		if u.Deactivated {
			d += " deactivated"
		}
		if u.SecurityStamp == "" {
			d += " no stamp"
		}
		out = append(out, d+" stamp "+u.SecurityStamp)
	}
	return strings.Join(out, ", ")
}
