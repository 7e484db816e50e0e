package apitest

import (
	"net/http"
	"strconv"
	"strings"

	"follows/db"
)

// Account is a user the test signed up, with its bearer token.
type Account struct {
	ID, Name, Token string
}

// CreateUser signs up a user.
func (s *Server) CreateUser(name string) Account {
	s.t.Helper()
	var out struct {
		CreateUser struct {
			User  struct{ ID, Name string }
			Token string
		}
	}
	s.Data("", `mutation($n: String!) { createUser(input: {name: $n}) { user { id name } token } }`,
		map[string]any{"n": name}, &out)
	return Account{ID: out.CreateUser.User.ID, Name: name, Token: out.CreateUser.Token}
}

// FollowResult is the data of FollowMutation.
type FollowResult struct {
	Follow struct {
		Follower, Followee struct{ Name string }
		FollowedAt         string
		AlreadyFollowing   bool
	}
}

// FollowMutation follows the user $id.
const FollowMutation = `mutation($id: ID!) { follow(input: {userId: $id}) {
  follower { name } followee { name } followedAt alreadyFollowing } }`

// Follow has who follow whom, which must succeed.
func (s *Server) Follow(who, whom Account) FollowResult {
	s.t.Helper()
	var out FollowResult
	s.Data(who.Token, FollowMutation, map[string]any{"id": whom.ID}, &out)
	return out
}

// Sample makes the graph over HTTP: alice->bob, alice->carol,
// bob->alice, carol->dave, bob->dave, in that order.
func (s *Server) Sample() map[string]Account {
	s.t.Helper()
	users := map[string]Account{}
	for _, name := range db.SampleUsers {
		users[name] = s.CreateUser(name)
	}
	for _, f := range db.SampleFollows {
		s.Follow(users[f[0]], users[f[1]])
	}
	return users
}

// LoaderBatches is how many batches a loader has run so far and how many
// keys they held together, as /metrics reports them: a test takes the
// difference across a request to see how the request batched.
func (s *Server) LoaderBatches(loader string) (batches, keys int) {
	s.t.Helper()
	r := s.Raw("GET", "/metrics", "", nil, nil)
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET /metrics: %d", r.Status)
	}
	label := `{loader="` + loader + `"} `
	for line := range strings.SplitSeq(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, "follows_loader_batch_size_count"+label); ok {
			batches, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(line, "follows_loader_batch_size_sum"+label); ok {
			f, _ := strconv.ParseFloat(v, 64)
			keys = int(f)
		}
	}
	return batches, keys
}
