package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// With one slot, requests run one at a time in the order they came, and
// one still waiting at its deadline is answered 503 SERVER_BUSY, saying
// nothing of it ran, with Retry-After; it never reaches the handler.
func TestInTurnFirstComeFirstServed(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	started := make(chan string)
	release := make(chan struct{})
	m := NewMetrics("")
	h := inTurn(1, m)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		mu.Lock()
		ran = append(ran, n)
		mu.Unlock()
		started <- n
		<-release
	}))
	// The request's deadline, as guardRequest gives it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("timeout"))
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	var wg sync.WaitGroup
	get := func(n string, timeout time.Duration) *http.Response {
		r, err := http.Get(fmt.Sprintf("%s/?n=%s&timeout=%s", srv.URL, n, timeout))
		if err != nil {
			t.Error(err)
			return nil
		}
		return r
	}
	waitFor := func(waiting int64) {
		for range 500 {
			if gauge(t, m, "follows_graphql_requests_waiting") == float64(waiting) {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("never %d waiting", waiting)
	}
	wg.Add(1)
	go func() { defer wg.Done(); get("0", time.Minute) }()
	<-started
	for i := 1; i <= 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); get(fmt.Sprint(i), time.Minute) }()
		waitFor(int64(i))
	}

	r := get("late", 50*time.Millisecond)
	if r == nil {
		t.FailNow()
	}
	var body struct {
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || len(body.Errors) != 1 ||
		body.Errors[0].Extensions.Code != "SERVER_BUSY" || !strings.Contains(body.Errors[0].Message, "try again") {
		t.Errorf("a request still waiting at its deadline: %d, Retry-After %q, %+v; want 503 SERVER_BUSY saying to try again",
			r.StatusCode, r.Header.Get("Retry-After"), body.Errors)
	}

	for i := range 5 {
		release <- struct{}{}
		if i < 4 {
			<-started
		}
	}
	wg.Wait()
	if want := []string{"0", "1", "2", "3", "4"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v: first come, first served, and the late one not at all", ran, want)
	}
}

// gauge is the value of the gauge named name in m.
func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
