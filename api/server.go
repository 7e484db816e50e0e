package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// ServerConfig is how the HTTP server treats connections; package main
// fills it from its flags (see docs/production.md, "Limits"). A zero duration or
// MaxConns is no limit.
type ServerConfig struct {
	// ReadTimeout bounds reading a request, headers and body; /graphql
	// also cuts its body off at the request's own deadline
	// (Config.RequestTimeout).
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// last byte of its answer, so a client that does not read its answer
	// cannot hold it in memory; keep it above Config.RequestTimeout.
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxConns is the most connections open at once; more wait in the
	// kernel's accept queue until one closes.
	MaxConns int
	// MaxClientConns is the most one client (an address, an IPv6 /64: the
	// rate limits' rule) may have open at once; more are answered 429
	// TOO_MANY_CONNECTIONS and closed at once, taking none of MaxConns.
	// It counts the connection's peer, which behind a proxy is the proxy:
	// leave it 0 (off) there, and cap clients at the proxy.
	MaxClientConns int
	// ShutdownGrace is how long requests in flight may take to finish
	// once shutdown begins; the connections left then are closed.
	ShutdownGrace time.Duration
}

// headerTimeout bounds reading a request's headers, which no honest
// client takes long to send.
const headerTimeout = 10 * time.Second

// DefaultServerConfig is the server's configuration before flags.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		// Headers get headerTimeout of these; a 1 MiB body (-max-body)
		// arrives in about 8 s at 1 Mbit/s.
		ReadTimeout: 20 * time.Second,
		// The request timeout (15 s) and as long again to send the answer.
		WriteTimeout: 30 * time.Second,
		// Longer than the 60 s after which common load balancers drop an
		// idle connection, so the server is not the one to close first.
		IdleTimeout: 75 * time.Second,
		// Far below the usual file descriptor limits, leaving room for the
		// database's files; an idle connection costs some 10 KB, an idle
		// subscriber some 80 KB. Room for the 1,500 streams of
		// DefaultClientCaps and 500 requests besides.
		MaxConns: 2000,
		// A client (a browser opens 6 connections to a host, and a
		// websocket per tab) rarely needs more than a few; 100 leaves room
		// for a small office behind one address, and takes a twentieth of
		// MaxConns.
		MaxClientConns: 100,
		// Below the 30 s that orchestrators commonly allow before they
		// kill a process.
		ShutdownGrace: 10 * time.Second,
	}
}

// Server is an http.Server with the limits of a ServerConfig.
type Server struct {
	srv    *http.Server
	cfg    ServerConfig
	log    *slog.Logger
	cancel context.CancelFunc // ends the context of every request
}

// NewServer serves h with cfg's timeouts; the errors of net/http go to
// log.
func NewServer(h http.Handler, cfg ServerConfig, log *slog.Logger) *Server {
	requests, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return requests },
	}
	if cfg.ReadTimeout > 0 {
		srv.ReadHeaderTimeout = min(headerTimeout, cfg.ReadTimeout)
	}
	return &Server{srv: srv, cfg: cfg, log: log, cancel: cancel}
}

// Serve accepts connections on ln, at most MaxConns at once, until ctx is
// done. Then it stops accepting, closes idle connections, lets the
// requests in flight finish for up to ShutdownGrace, and closes what is
// left, cancelling those requests' contexts; a shutdown so made returns
// nil. It returns an error only when serving failed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.cancel()
	// Inside the -max-conns limit, so that a connection it refuses never
	// holds one of its slots.
	if s.cfg.MaxClientConns > 0 {
		ln = limitClients(ln, s.cfg.MaxClientConns)
	}
	if s.cfg.MaxConns > 0 {
		ln = netutil.LimitListener(ln, s.cfg.MaxConns)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", s.cfg.ShutdownGrace)
	graceCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(graceCtx); errors.Is(err, context.DeadlineExceeded) {
		// What is left is slow or stalled: a client trickling a body, or a
		// request that outlived the grace. Cut them off.
		s.log.Warn("closing the connections still open after the shutdown grace")
		s.cancel()
		s.srv.Close() // its error would be the listener's, closed already
	} else if err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
