package adopt_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/auth"
	"follows/db"
	"follows/db/adopt/eftest"
)

// dryRun is `follows migrate -dry-run`: the plan and the error of
// adopting and migrating in a transaction rolled back.
func dryRun(ctx context.Context, dsn string) (string, error) {
	plan, err := db.PlanAdoption(ctx, dsn)
	return plan.String(), err
}

// migrate is `follows migrate`: the store opened, which adopts the
// database and migrates it, and what adoption did.
func migrate(ctx context.Context, dsn string) (string, error) {
	s, err := db.Open(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer s.Close()
	return s.Adopted.String(), nil
}

// server is the real handler over an existing database, opened (and so
// adopted) as the server opens it.
type server struct {
	url   string
	store *db.Store
	stop  func()
}

func serve(t *testing.T, dsn string) *server {
	t.Helper()
	store, err := db.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("open the EF Core database: %v", err)
	}
	tokens, err := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.DefaultConfig()
	cfg.SignupRate, cfg.MutationRate = api.Rate{}, api.Rate{}
	srv := httptest.NewServer(api.NewHandler(store, tokens, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), api.NewMetrics("")))
	s := &server{url: srv.URL, store: store}
	s.stop = sync.OnceFunc(func() {
		srv.Close()
		if err := store.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
	t.Cleanup(s.stop)
	return s
}

// token is a bearer token for the user with id, as `follows token` mints.
func (s *server) token(t *testing.T, id int64) string {
	t.Helper()
	found, err := s.store.UsersByID(t.Context(), []int64{id})
	if err != nil || found[0] == nil {
		t.Fatalf("user %d: %v", id, err)
	}
	tokens, _ := auth.NewTokens([]byte(apitest.Secret), time.Hour)
	return tokens.Mint(id, found[0].SecurityStamp)
}

// post sends a GraphQL request and returns the decoded response.
func (s *server) post(t *testing.T, token, query string, vars map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	apitest.PostTo(t, s.url, token, query, vars, &out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// checkFollows asks the server who follows whom and compares it with the
// pairs, direction included.
func (s *server) checkFollows(t *testing.T, pairs [][2]int) {
	t.Helper()
	wantFollowing, wantFollowers := map[string][]string{}, map[string][]string{}
	for _, p := range pairs {
		a, b := eftest.Names[p[0]], eftest.Names[p[1]]
		wantFollowing[a] = append(wantFollowing[a], b)
		wantFollowers[b] = append(wantFollowers[b], a)
	}
	for id, name := range eftest.Names {
		var got struct {
			Data struct {
				User struct {
					Name                          string
					FollowerCount, FollowingCount int
					Followers, Following          struct{ Nodes []struct{ Name string } }
				}
			}
		}
		b, _ := json.Marshal(s.post(t, "", `query($id: ID) { user(id: $id) { name followerCount followingCount
		  followers { nodes { name } } following { nodes { name } } } }`, map[string]any{"id": itoa(id)}))
		json.Unmarshal(b, &got)
		u := got.Data.User
		names := func(ns []struct{ Name string }) []string {
			out := []string{}
			for _, n := range ns {
				out = append(out, n.Name)
			}
			slices.Sort(out)
			return out
		}
		wf, wr := append([]string{}, wantFollowing[name]...), append([]string{}, wantFollowers[name]...)
		slices.Sort(wf)
		slices.Sort(wr)
		if u.Name != name || !slices.Equal(names(u.Following.Nodes), wf) || !slices.Equal(names(u.Followers.Nodes), wr) ||
			u.FollowingCount != len(wf) || u.FollowerCount != len(wr) {
			t.Errorf("%s: following %v (%d), followers %v (%d); want %v and %v", name,
				names(u.Following.Nodes), u.FollowingCount, names(u.Followers.Nodes), u.FollowerCount, wf, wr)
		}
	}
}

// followAlice has the holder of token follow alice (user 1) on a converted
// or adopted database, which must answer with her new follower count.
func (s *server) followAlice(t *testing.T, token string, followers int) {
	t.Helper()
	r := s.post(t, token, `mutation { follow(input: {userId: "1"}) { followee { followerCount } } }`, nil)
	if b, _ := json.Marshal(r["data"]); string(b) != `{"follow":{"followee":{"followerCount":`+itoa(followers)+`}}}` {
		t.Errorf("follow alice on the adopted database: %s %v, want %d followers", b, r["errors"], followers)
	}
}
