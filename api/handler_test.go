package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"follows/api/apitest"
)

// A failure inside the database reaches the client as a bare internal
// error: no SQL, no driver text.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.CreateUser("alice")
	sqlDB := apitest.OpenRaw(t, s.DBPath)
	if _, err := sqlDB.Exec(`DROP INDEX IX_Follows_FolloweeId_CreatedAt_FollowerId; ALTER TABLE Follows RENAME TO FollowsGone`); err != nil {
		t.Fatal(err)
	}
	r := s.Do("", `{ user(name: "alice") { followers { nodes { name } } } }`, nil)
	if r.Code() != "INTERNAL_SERVER_ERROR" {
		t.Fatalf("code = %q, want INTERNAL_SERVER_ERROR (%+v)", r.Code(), r.Errors)
	}
	for _, e := range r.Errors {
		if e.Message != "internal server error" {
			t.Errorf("message %q reaches the client", e.Message)
		}
	}
	if !strings.Contains(s.Logs(), "Follows") {
		t.Errorf("the cause was not logged: %s", s.Logs())
	}
}

func TestHTTPEndpoints(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	s.CreateUser("alice")
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
			req, _ := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
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
