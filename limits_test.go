package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"follows/api"
)

// The connection and rate flags reach the server's configuration, and a
// value that makes no sense stops it at start, before the database is
// opened, naming the flag.
func TestConnectionAndRateFlags(t *testing.T) {
	c, _, err := parseServer([]string{"-rate-signup", "5/10m", "-max-conns", "50", "-idle-timeout", "5s"},
		map[string]string{"FOLLOWS_RATE_MUTATIONS": "off", "FOLLOWS_CLIENT_IP_HEADER": "X-Real-IP"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	h, s := c.handlerConfig(), c.serverConfig()
	if h.SignupRate != (api.Rate{N: 5, Per: 10 * time.Minute}) || h.MutationRate != (api.Rate{}) || h.ClientIPHeader != "X-Real-IP" {
		t.Errorf("handler configuration %+v", h)
	}
	if want := (api.ServerConfig{ReadTimeout: 20 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 5 * time.Second, MaxConns: 50, ShutdownGrace: 10 * time.Second}); s != want {
		t.Errorf("server configuration %+v, want %+v", s, want)
	}

	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-rate-signup", "lots"}, nil, "-rate-signup"},
		{nil, map[string]string{"FOLLOWS_RATE_MUTATIONS": "10/fortnight"}, "FOLLOWS_RATE_MUTATIONS"},
		{[]string{"-rate-mutations", "0/m"}, nil, "-rate-mutations"},
		{[]string{"-request-timeout", "1m"}, nil, "-write-timeout"},
		{[]string{"-max-conns", "-1"}, nil, "-max-conns"},
	} {
		dir := t.TempDir()
		args := append([]string{"-check-counts", "-db", filepath.Join(dir, "x.db")}, tc.args...)
		err := run(t.Context(), args, io.Discard, io.Discard, func(k string) string { return tc.env[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one naming %s", tc.args, tc.env, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v %v: the database was opened before the error", tc.args, tc.env)
		}
	}
}
