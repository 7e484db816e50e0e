package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"follows/auth"
	"follows/db"
)

// testServer is the real HTTP handler on a loopback port, over a SQLite
// file of its own.
type testServer struct {
	t      *testing.T
	url    string
	dbPath string
	store  *db.Store
	logs   *bytes.Buffer
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "follows.db")
	store, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: logs}, nil))
	cfg := defaultConfig()
	cfg.debug = true
	h := newHandler(store, auth.NewTokens([]byte("test secret"), time.Hour), cfg, log)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{t: t, url: srv.URL, dbPath: path, store: store, logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// gqlError is one entry of a response's errors.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type response struct {
	status     int
	Data       json.RawMessage `json:"data"`
	Errors     []gqlError      `json:"errors"`
	Extensions struct {
		Debug struct {
			SQLQueries int `json:"sqlQueries"`
		} `json:"debug"`
	} `json:"extensions"`
}

func (r response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// do posts a GraphQL request with an optional bearer token. It fails the
// test on a server error status, which no request may cause.
func (s *testServer) do(token, query string, vars map[string]any) response {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", s.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		s.t.Fatalf("status %d for %s: %s", resp.StatusCode, query, raw)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("response is not JSON: %s", raw)
	}
	r.status = resp.StatusCode
	return r
}

// data runs a request that must succeed and decodes its data into out.
func (s *testServer) data(token, query string, vars map[string]any, out any) response {
	s.t.Helper()
	r := s.do(token, query, vars)
	if len(r.Errors) > 0 {
		s.t.Fatalf("%s: errors %+v", query, r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		s.t.Fatalf("decode %s: %v", r.Data, err)
	}
	return r
}

type account struct {
	ID, Name, Token string
}

func (s *testServer) createUser(name string) account {
	s.t.Helper()
	var out struct {
		CreateUser struct {
			User  struct{ ID, Name string }
			Token string
		}
	}
	s.data("", `mutation($n: String!) { createUser(input: {name: $n}) { user { id name } token } }`,
		map[string]any{"n": name}, &out)
	return account{ID: out.CreateUser.User.ID, Name: name, Token: out.CreateUser.Token}
}

type followResult struct {
	Follow struct {
		Follower, Followee struct{ Name string }
		FollowedAt         string
		AlreadyFollowing   bool
	}
}

const followMutation = `mutation($id: ID!) { follow(input: {userId: $id}) {
  follower { name } followee { name } followedAt alreadyFollowing } }`

func (s *testServer) follow(who, whom account) followResult {
	s.t.Helper()
	var out followResult
	s.data(who.Token, followMutation, map[string]any{"id": whom.ID}, &out)
	return out
}

// sample makes the graph over HTTP: alice->bob, alice->carol,
// bob->alice, carol->dave, bob->dave, in that order.
func (s *testServer) sample() map[string]account {
	s.t.Helper()
	users := map[string]account{}
	for _, name := range db.SampleUsers {
		users[name] = s.createUser(name)
	}
	for _, f := range db.SampleFollows {
		s.follow(users[f[0]], users[f[1]])
	}
	return users
}

func nodeNames(nodes []struct{ Name string }) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func TestSampleGraphOverHTTP(t *testing.T) {
	s := startServer(t)
	u := s.sample()

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
	s.data("", `{ user(name: "alice") { followerCount followingCount
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
	s.data("", `query($id: ID) { user(id: $id) { followers { edges { node { name } followedAt } } } }`,
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
	s.data(u["bob"].Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId deletedFollows } }`,
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
	s.data("", `{ users { nodes { name following { nodes { name } } } } }`, nil, &left)
	var follows []string
	for _, n := range left.Users.Nodes {
		for _, f := range n.Following.Nodes {
			follows = append(follows, n.Name+"->"+f.Name)
		}
	}
	if !slices.Equal(follows, []string{"alice->carol", "carol->dave"}) {
		t.Errorf("follows after bob left = %v, want [alice->carol carol->dave]", follows)
	}
	if r := s.do("", `{ user(name: "bob") { id } }`, nil); string(r.Data) != `{"user":null}` {
		t.Errorf("user(name: bob) after delete = %s, want null", r.Data)
	}
}

// When alice follows dave, the row says FollowerId = alice, and dave's
// followers hold alice, not the other way round.
func TestFollowDirection(t *testing.T) {
	s := startServer(t)
	alice, dave := s.createUser("alice"), s.createUser("dave")
	out := s.follow(alice, dave)
	if out.Follow.Follower.Name != "alice" || out.Follow.Followee.Name != "dave" || out.Follow.AlreadyFollowing {
		t.Errorf("follow payload = %+v", out.Follow)
	}
	states, err := s.store.Follows(context.Background(), []db.Pair{
		{Follower: mustID(t, alice.ID), Followee: mustID(t, dave.ID)},
		{Follower: mustID(t, dave.ID), Followee: mustID(t, alice.ID)},
	})
	if err != nil || !states[0].Exists || states[1].Exists {
		t.Errorf("rows alice->dave, dave->alice = %+v, %v; want only the first", states, err)
	}
	// The payload's counts are read after the write.
	r := s.do(alice.Token, `mutation($id: ID!) { unfollow(input: {userId: $id}) {
	  follower { followingCount } followee { followerCount } } }`, map[string]any{"id": dave.ID})
	if string(r.Data) != `{"unfollow":{"follower":{"followingCount":0},"followee":{"followerCount":0}}}` {
		t.Errorf("unfollow payload = %s %+v", r.Data, r.Errors)
	}
	r = s.do(alice.Token, `mutation($id: ID!) { follow(input: {userId: $id}) {
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
	s.data(alice.Token, `query($id: ID) { dave: user(id: $id) { followerCount viewerFollows followsViewer
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
	s := startServer(t)
	star := s.createUser("star")
	var want []string
	for i := range 55 {
		fan := s.createUser(fmt.Sprintf("fan%02d", i))
		s.follow(fan, star)
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
		s.data("", `query($id: ID, $after: String) { user(id: $id) { followers(first: 10, after: $after) {
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
	s := startServer(t)
	u := s.sample()
	alice, dave := u["alice"], u["dave"]
	tampered := alice.Token[:len(alice.Token)-3] + "AAA"
	forgedFor := func(id string) string {
		return auth.NewTokens([]byte("not the secret"), time.Hour).Mint(mustID(t, id))
	}
	tests := []struct {
		name     string
		token    string
		query    string
		vars     map[string]any
		wantCode string
		check    func(t *testing.T, r response)
	}{
		{name: "self-follow", token: alice.Token, query: followMutation, vars: map[string]any{"id": alice.ID},
			wantCode: "BAD_USER_INPUT", check: func(t *testing.T, r response) {
				if !strings.Contains(r.Errors[0].Message, "cannot follow yourself") {
					t.Errorf("message %q", r.Errors[0].Message)
				}
			}},
		{name: "double follow", token: alice.Token, query: followMutation, vars: map[string]any{"id": u["bob"].ID},
			check: func(t *testing.T, r response) {
				var out followResult
				json.Unmarshal(r.Data, &out)
				if !out.Follow.AlreadyFollowing || out.Follow.FollowedAt == "" {
					t.Errorf("second follow = %+v, want alreadyFollowing with the first time", out.Follow)
				}
			}},
		{name: "follow a user who does not exist", token: alice.Token, query: followMutation, vars: map[string]any{"id": "999999"}, wantCode: "NOT_FOUND"},
		{name: "follow an id that is no number", token: alice.Token, query: followMutation, vars: map[string]any{"id": "bob"}, wantCode: "BAD_USER_INPUT"},
		{name: "follow without token", query: followMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "follow with tampered token", token: tampered, query: followMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "follow with token of another secret", token: forgedFor(alice.ID), query: followMutation, vars: map[string]any{"id": dave.ID}, wantCode: "UNAUTHENTICATED"},
		{name: "delete someone else", token: alice.Token, query: `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`,
			vars: map[string]any{"id": dave.ID}, wantCode: "FORBIDDEN"},
		{name: "unfollow not followed", token: dave.Token, query: `mutation($id: ID!) { unfollow(input: {userId: $id}) { wasFollowing follower { name } followee { name } } }`,
			vars: map[string]any{"id": alice.ID}, check: func(t *testing.T, r response) {
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
			r := s.do(tc.token, tc.query, tc.vars)
			if r.code() != tc.wantCode {
				t.Fatalf("code = %q, want %q (errors %+v)", r.code(), tc.wantCode, r.Errors)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	// A deleted user's token stops working.
	s.data(dave.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedFollows } }`, map[string]any{"id": dave.ID}, &struct{}{})
	if r := s.do(dave.Token, followMutation, map[string]any{"id": alice.ID}); r.code() != "UNAUTHENTICATED" {
		t.Errorf("deleted user's follow: code %q, want UNAUTHENTICATED", r.code())
	}
	if r := s.do(dave.Token, `{ viewer { id } }`, nil); string(r.Data) != `{"viewer":null}` {
		t.Errorf("deleted user's viewer = %s, want null", r.Data)
	}
}

// A list of users each with counts and followers costs a fixed number of
// statements, the same for 5 users as for 50: never one per user.
func TestStatementsPerRequestDoNotGrowWithUsers(t *testing.T) {
	s := startServer(t)
	var accounts []account
	for i := range 50 {
		accounts = append(accounts, s.createUser(fmt.Sprintf("user%02d", i)))
	}
	for i, a := range accounts {
		for j := 1; j <= 12; j++ {
			s.follow(a, accounts[(i+j)%len(accounts)])
		}
	}
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
		r := s.data(accounts[0].Token, query, map[string]any{"n": n}, &out)
		if len(out.Users.Nodes) != n || len(out.Users.Nodes[n-1].Followers.Nodes) != 10 {
			t.Fatalf("first %d users: got %d, the last with %d followers", n, len(out.Users.Nodes), len(out.Users.Nodes[n-1].Followers.Nodes))
		}
		counts[n] = r.Extensions.Debug.SQLQueries
	}
	// users, their total, viewerFollows, followers pages.
	if counts[50] > 5 || counts[50] != counts[5] {
		t.Errorf("SQL statements: %d for 5 users, %d for 50; want the same, at most 5", counts[5], counts[50])
	}

	// Asking each of the 50 whether the viewer blocks it, or it the viewer,
	// adds one statement for the whole page.
	withBlocks := strings.Replace(query, "viewerFollows", "viewerFollows viewerBlocks blocksViewer", 1)
	r := s.data(accounts[0].Token, withBlocks, map[string]any{"n": 50}, &struct{}{})
	if got := r.Extensions.Debug.SQLQueries; got > counts[50]+1 {
		t.Errorf("viewerBlocks and blocksViewer on 50 users: %d statements, want at most %d", got, counts[50]+1)
	}

	// A profile with its 20 newest followers costs the same for a user
	// with 49 followers as for one with none.
	lonely := s.createUser("lonely")
	for _, a := range accounts[1:] {
		s.follow(a, accounts[0])
	}
	profile := `query($id: ID) { user(id: $id) { name followerCount followingCount followers(first: 20) { nodes { name } } } }`
	for _, id := range []string{accounts[0].ID, lonely.ID} {
		r := s.data("", profile, map[string]any{"id": id}, &struct{}{})
		if q := r.Extensions.Debug.SQLQueries; q > 4 || q < 1 {
			t.Errorf("profile of user %s: %d SQL statements, want 1 to 4", id, q)
		}
	}
}

// A failure inside the database reaches the client as a bare internal
// error: no SQL, no driver text.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	s := startServer(t)
	s.createUser("alice")
	sqlDB := openRaw(t, s.dbPath)
	if _, err := sqlDB.Exec(`DROP INDEX IX_Follows_FolloweeId_CreatedAt_FollowerId; ALTER TABLE Follows RENAME TO FollowsGone`); err != nil {
		t.Fatal(err)
	}
	r := s.do("", `{ user(name: "alice") { followers { nodes { name } } } }`, nil)
	if r.code() != "INTERNAL_SERVER_ERROR" {
		t.Fatalf("code = %q, want INTERNAL_SERVER_ERROR (%+v)", r.code(), r.Errors)
	}
	for _, e := range r.Errors {
		if e.Message != "internal server error" {
			t.Errorf("message %q reaches the client", e.Message)
		}
	}
	if !strings.Contains(s.logs.String(), "Follows") {
		t.Errorf("the cause was not logged: %s", s.logs)
	}
}

func TestHTTPEndpoints(t *testing.T) {
	s := startServer(t)
	s.createUser("alice")
	tests := []struct {
		name, method, path, body, want string
		status                         int
	}{
		{"health", "GET", "/healthz", "", "ok", 200},
		{"GraphiQL", "GET", "/", "", "graphiql", 200},
		{"query over GET", "GET", "/graphql?query=%7Busers%7BtotalCount%7D%7D", "", `{"data":{"users":{"totalCount":1}}`, 200},
		{"introspection", "POST", "/graphql", `{"query":"{ __schema { queryType { name } } }"}`, `"queryType":{"name":"Query"}`, 200},
		{"unknown path", "GET", "/nope", "", "", 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, s.url+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("%s %s = %d %.200s; want %d containing %q", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
}

// openRaw opens the server's SQLite file directly, beside the server.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	d, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
