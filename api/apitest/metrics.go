package apitest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// WaitMetric waits, up to within, until the /metrics of the server at url
// has the line want, such as "follows_graphql_requests_waiting 1".
func WaitMetric(t testing.TB, url, want string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.SplitSeq(string(body), "\n") {
			if line == want {
				return
			}
		}
	}
	t.Fatalf("/metrics never said %q", want)
}
