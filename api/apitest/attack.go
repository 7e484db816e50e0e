package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ProfileQuery is the ordinary request that must keep being answered
// while an attack runs: a profile on the sample graph (Sample).
const ProfileQuery = `{ user(name: "alice") { name followerCount followers(first: 10) { nodes { name } } } }`

// Attack budgets: while an attack runs, ProfileQuery answers (nine in ten
// of its requests) within SlowdownFactor times its idle latency plus
// SlowdownMargin (generous, since the machine is shared), and the
// process's peak resident memory stays under MaxPeakRSS. The ninth decile
// rather than the worst: on a shared two-core machine one request in a
// few hundred meets a scheduling or GC stall of its own, while an attack
// that hurts the server slows them all.
const (
	SlowdownFactor = 10
	SlowdownMargin = 100 * time.Millisecond
	MaxPeakRSS     = 300 << 20
)

// UnderAttack runs attack, which sends hostile requests and checks how
// they are refused, while another client keeps asking ProfileQuery (on a
// graph made with Sample). It fails the test if a profile request fails
// or answers slower than the budget, or if the process's peak resident
// memory (server and client both) passes MaxPeakRSS. Under the race
// detector the latency is logged, not checked. Call it from the test's
// goroutine; attack may fail the test.
func (s *Server) UnderAttack(attack func()) {
	s.t.Helper()
	var idle []time.Duration
	for range 20 {
		d, err := s.profile()
		if err != nil {
			s.t.Fatalf("before the attack: %v", err)
		}
		idle = append(idle, d)
	}
	slices.Sort(idle)
	budget := SlowdownFactor*idle[len(idle)/2] + SlowdownMargin

	rssOK := resetPeakRSS()
	stop := make(chan struct{})
	type result struct {
		took []time.Duration
		err  error
	}
	done := make(chan result, 1) // buffered: if attack fails the test, nobody reads it
	go func() {
		var r result
		defer func() { done <- r }()
		for {
			d, err := s.profile()
			r.took = append(r.took, d)
			if err != nil {
				r.err = err
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	func() {
		defer close(stop)
		attack()
	}()
	r := <-done
	slices.Sort(r.took)
	n := len(r.took)
	p90, worst := r.took[n*9/10], r.took[n-1]
	s.t.Logf("profile query: idle %v, under attack %v (ninth decile), up to %v over %d requests; peak RSS %d MB",
		idle[len(idle)/2], p90, worst, n, peakRSS()>>20)
	if r.err != nil {
		s.t.Errorf("during the attack, a profile request failed: %v", r.err)
	}
	switch {
	case raceDetector:
		s.t.Log("the profile query's latency is not checked under the race detector")
	case p90 > budget:
		s.t.Errorf("during the attack, one in ten profile queries took over %v (of %d requests); idle it takes %v, the budget is %v",
			p90, n, idle[len(idle)/2], budget)
	}
	if rssOK {
		if peak := peakRSS(); peak > MaxPeakRSS {
			s.t.Errorf("peak RSS during the attack %d MB, want under %d MB", peak>>20, MaxPeakRSS>>20)
		}
	} else {
		s.t.Log("peak RSS not checked: /proc/self/clear_refs cannot be written here")
	}
}

// profileClient bounds each profile request, so that a server that stops
// answering fails the test rather than hanging it.
var profileClient = &http.Client{Timeout: 30 * time.Second}

// profile times one ProfileQuery, which must answer alice's profile.
func (s *Server) profile() (time.Duration, error) {
	start := time.Now()
	resp, err := profileClient.Post(s.URL+"/graphql", "application/json", bytes.NewReader(Body(ProfileQuery, nil)))
	if err != nil {
		return time.Since(start), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"name":"alice"`)) || bytes.Contains(body, []byte(`"errors"`)) {
		return d, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	return d, nil
}

// resetPeakRSS starts the kernel's count of the process's peak resident
// memory (VmHWM) again from its current size, reporting whether it could.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is the process's peak resident memory in bytes since
// resetPeakRSS (VmHWM in /proc/self/status).
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// AttackClient sends hostile requests with a time limit, so that an
// attack that the server does not refuse fails its test instead of
// hanging it.
var AttackClient = &http.Client{Timeout: 60 * time.Second}

// Send sends one request with AttackClient and reads what came back. A
// request that fails (a timeout, a reset) fails the test.
func (s *Server) Send(req *http.Request) RawResponse {
	s.t.Helper()
	resp, err := AttackClient.Do(req)
	if err != nil {
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			s.t.Fatalf("%s %.100s: no answer within %v", req.Method, req.URL, AttackClient.Timeout)
		}
		s.t.Fatalf("%s %.100s: %.300v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
	json.Unmarshal(b, &r.Parsed)
	return r
}
