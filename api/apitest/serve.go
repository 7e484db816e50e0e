package apitest

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"follows/api"
)

// Serving is a Server that api.Server serves, as the follows command does,
// on a listener the test chose, so that tests can reach its connection
// limits and shut it down.
type Serving struct {
	*Server
	stop context.CancelFunc
	done chan error
}

// Serve serves a new, empty graph on ln with cfg's connection limits and
// the handler Start makes (opts change its configuration); it is shut
// down when the test ends, if Shutdown has not been called.
func Serve(t testing.TB, ln net.Listener, cfg api.ServerConfig, opts ...func(*api.Config)) *Serving {
	t.Helper()
	s, h := SQLite.newServer(t, "", opts)
	s.URL = "http://" + ln.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	srv := api.NewServer(h, cfg, slog.New(slog.NewTextHandler(s.logs, nil)))
	sv := &Serving{Server: s, stop: stop, done: make(chan error, 1)}
	go func() { sv.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { sv.Shutdown(time.Minute) })
	return sv
}

// Shutdown does what SIGTERM does to the command: it ends the server's
// context and waits up to within for Serve to return, returning its
// error, or context.DeadlineExceeded if it has not returned by then.
func (s *Serving) Shutdown(within time.Duration) error {
	s.stop()
	select {
	case err := <-s.done:
		s.done <- err // for a later call
		return err
	case <-time.After(within):
		return context.DeadlineExceeded
	}
}
