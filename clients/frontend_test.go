package clients_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"follows/api/apitest"
)

// followedStar makes a user followed by eight others, in order, and one
// more user who does not follow it yet; it returns what apollo.mjs and
// relay.mjs read: the star's id, its followers' names newest first, and
// the fan.
func followedStar(s *apitest.Server) string {
	star := s.CreateUser("star")
	var names []string
	for i := range 8 {
		f := s.CreateUser(fmt.Sprintf("follower%d", i))
		s.Follow(f, star)
		names = append([]string{f.Name}, names...)
	}
	fan := s.CreateUser("fan")
	b, _ := json.Marshal(map[string]any{
		"starId": star.ID, "followers": names,
		"fan": map[string]string{"id": fan.ID, "name": fan.Name, "token": fan.Token},
	})
	return string(b)
}

// runNode runs a check script of clients/ and fails the test with its
// output unless every check passed.
func runNode(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("node", args...).CombinedOutput()
	t.Logf("node %s:\n%s", args[0], out)
	if err != nil || strings.Contains(string(out), "FAIL") {
		t.Fatalf("node %s: %v", args[0], err)
	}
}

// Apollo Client 3 with docs/clients.md's cache and updates (apollo/follows.mjs):
// relayStylePagination pages a followers list forward, and backward from
// its end, without a duplicate or a gap, follow and unfollow payloads
// change the cached list with no request but the mutation's, and node ids
// round-trip.
func TestApolloClient(t *testing.T) {
	nodeTools(t, "@apollo/client")
	s := apitest.Start(t)
	runNode(t, "apollo.mjs", s.URL+"/graphql", followedStar(s))
}

// relay-compiler compiles docs/clients.md's Relay snippet (relay/UserFollowers.js:
// a @refetchable user fragment with a @connection paged both ways, and
// mutations with @prependEdge, @deleteEdge and @deleteRecord) against
// schema.graphql, and relay-runtime runs what it made against the server:
// the connection pages forward, and backward from its end, through
// node(id:), and the mutations update it in the store without a refetch.
func TestRelay(t *testing.T) {
	nodeTools(t, "relay-compiler", "relay-runtime")
	dir := filepath.Join("generated", "relay")
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("npx", "--no-install", "relay-compiler").CombinedOutput(); err != nil {
		t.Fatalf("relay-compiler: %v\n%s", err, out)
	}
	s := apitest.Start(t)
	runNode(t, "relay.mjs", s.URL+"/graphql", followedStar(s))
}

// The clients page (docs/clients.md) shows the Apollo and Relay snippets
// that the tests above run, as they are.
func TestREADMEShowsTheTestedSnippets(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"apollo/follows.mjs", "relay/UserFollowers.js"} {
		snippet, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), string(snippet)) {
			t.Errorf("docs/clients.md does not show clients/%s as it is", f)
		}
	}
}
