package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// stalledBody opens a connection that posts to /graphql a body it
// announces as 1000 bytes and sends a byte per tick of, as a slowloris
// client does, until the server answers or closes the connection.
type stalledBody struct {
	conn   net.Conn
	answer chan string // the status line the server sent, or "" if it only closed
}

func startStalledBody(t *testing.T, addr string, tick time.Duration) *stalledBody {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	s := &stalledBody{conn: conn, answer: make(chan string, 1)}
	go func() {
		buf := make([]byte, 512)
		for {
			conn.SetReadDeadline(time.Now().Add(tick))
			n, err := conn.Read(buf)
			var ne net.Error
			switch {
			case n > 0:
				s.answer <- string(bytes.SplitN(buf[:n], []byte("\r\n"), 2)[0])
				return
			case errors.As(err, &ne) && ne.Timeout():
				if _, err := conn.Write([]byte(" ")); err != nil {
					s.answer <- ""
					return
				}
			default: // closed, by the server or by the test's cleanup
				s.answer <- ""
				return
			}
		}
	}()
	return s
}

// wait is the status line the server answered with, or "" if it closed
// the connection without one, or "open" if it did neither within d.
func (s *stalledBody) wait(d time.Duration) string {
	select {
	case a := <-s.answer:
		return a
	case <-time.After(d):
		return "open"
	}
}

// countingListener counts the connections the server has open, and the
// most it has had at once.
type countingListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

func listen(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: ln}
}

// queryWhile sends a normal query, one at a time, until stop is closed,
// each on a new connection, and returns how many it sent and the longest
// any took; a query that fails fails the test.
func queryWhile(t *testing.T, url string, stop <-chan struct{}) (n int, longest time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		select {
		case <-stop:
			return n, longest
		case <-time.After(50 * time.Millisecond):
		}
		start := time.Now()
		resp, err := client.Post(url+"/graphql", "application/json", bytes.NewReader(apitest.Body(`{ users { totalCount } }`, nil)))
		if err != nil {
			t.Errorf("a normal query while the server is under attack: %v", err)
			return n, longest
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"totalCount":0`)) {
			t.Errorf("a normal query while the server is under attack: %d %s", resp.StatusCode, body)
		}
		n++
		longest = max(longest, time.Since(start))
	}
}

// stallWhileQuerying starts n stalled bodies against the server at url
// and sends normal queries until each has ended or within has passed. It
// tallies how the stalled bodies ended (wait's answers) and says how many
// queries were answered and the longest one took.
func stallWhileQuerying(t *testing.T, url string, n int, within time.Duration) (ends map[string]int, queries int, longest time.Duration) {
	t.Helper()
	stalled := make([]*stalledBody, n)
	for i := range stalled {
		stalled[i] = startStalledBody(t, strings.TrimPrefix(url, "http://"), 200*time.Millisecond)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { queries, longest = queryWhile(t, url, stop); close(done) }()
	ends = map[string]int{}
	deadline := time.Now().Add(within)
	for _, c := range stalled {
		ends[c.wait(time.Until(deadline))]++
	}
	close(stop)
	<-done
	t.Logf("stalled bodies: %v; %d normal queries meanwhile, the slowest in %v", ends, queries, longest)
	return ends, queries, longest
}

// Five hundred clients trickling a body are cut off at the request
// deadline with 408, while normal queries keep being answered.
func TestStalledBodiesAreCut(t *testing.T) {
	cfg := api.DefaultServerConfig()
	cfg.MaxClientConns = 0 // the 500 come from one address; here they must reach the deadline
	s := apitest.Serve(t, listen(t), cfg, func(c *api.Config) { c.RequestTimeout = time.Second })
	ends, queries, longest := stallWhileQuerying(t, s.URL, 500, 20*time.Second)
	if ends["HTTP/1.1 408 Request Timeout"] != 500 {
		t.Errorf("of 500 stalled bodies, after 20s: %v; want all answered 408", ends)
	}
	if queries == 0 || longest > 10*time.Second {
		t.Errorf("%d normal queries answered meanwhile, the slowest in %v", queries, longest)
	}
}

// At its connection cap the server opens no more connections, and a
// normal query waits for a slot, which the timeouts free, rather than
// forever.
func TestConnectionCap(t *testing.T) {
	ln := listen(t)
	cfg := api.DefaultServerConfig()
	cfg.MaxConns = 20
	s := apitest.Serve(t, ln, cfg, func(c *api.Config) { c.RequestTimeout = time.Second })
	ends, queries, longest := stallWhileQuerying(t, s.URL, 60, 30*time.Second)
	if peak := ln.peak.Load(); peak > int64(cfg.MaxConns) {
		t.Errorf("%d connections were open at once; the cap is %d", peak, cfg.MaxConns)
	}
	if ends["open"] > 0 {
		t.Errorf("%d of 60 stalled bodies still open after 30s", ends["open"])
	}
	if queries == 0 || longest > 20*time.Second {
		t.Errorf("%d normal queries answered meanwhile, the slowest in %v", queries, longest)
	}
}

// Shutdown with idle connections, connections that never sent a
// request and bodies still trickling in returns nil within the grace,
// and a request in flight is answered.
func TestShutdownWithStalledConnections(t *testing.T) {
	ln := listen(t)
	cfg := api.DefaultServerConfig()
	cfg.ShutdownGrace = 2 * time.Second
	// Loaders that wait keep the in-flight request running into the shutdown.
	s := apitest.Serve(t, ln, cfg, func(c *api.Config) { c.BatchWait = 300 * time.Millisecond })
	if _, err := s.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()

	var idle []net.Conn
	for range 10 { // kept alive after a request, then idle
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for range 10 { // connected, nothing sent
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		idle = append(idle, c)
	}
	var stalled []*stalledBody
	for range 10 {
		stalled = append(stalled, startStalledBody(t, addr, 200*time.Millisecond))
	}
	for ln.open.Load() < 30 {
		time.Sleep(10 * time.Millisecond)
	}
	inFlight := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/graphql", "application/json", bytes.NewReader(apitest.Body(`{ users { nodes { followers { nodes { name } } } } }`, nil)))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"name":"alice"`)) {
				err = fmt.Errorf("%d %s", resp.StatusCode, body)
			}
		}
		inFlight <- err
	}()
	for ln.open.Load() < 31 {
		time.Sleep(10 * time.Millisecond)
	}

	const within = 10 * time.Second
	if err := s.Shutdown(within); errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Serve had not returned %v after the shutdown began (grace %v)", within, cfg.ShutdownGrace)
	} else if err != nil {
		t.Errorf("Serve after the shutdown: %v, want nil", err)
	}
	if err := <-inFlight; err != nil {
		t.Errorf("the request in flight at the shutdown: %v", err)
	}
	for i, c := range idle {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Errorf("idle connection %d after the shutdown: %v, want it closed", i, err)
		}
	}
	for i, c := range stalled {
		if a := c.wait(5 * time.Second); a == "open" {
			t.Errorf("stalled body %d is still open after the shutdown", i)
		}
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
