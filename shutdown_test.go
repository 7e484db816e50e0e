package main

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM with connections open that are idle, that never sent a
// request, or that stalled partway through a body still ends the process
// with status 0, within the default shutdown grace (10 s) and some.
func TestShutdownWithStalledConnections(t *testing.T) {
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "follows.db"))
	addr := strings.TrimPrefix(url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range 10 { // kept alive after a request
		c := dial()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // connected, nothing sent
		dial()
	}
	for range 10 { // a body that stopped coming
		fmt.Fprintf(dial(), "POST /graphql HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	}
	// The server has them all once it answers after them.
	if resp, err := http.Get(url + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	exitLog(t, cmd, lines, 20*time.Second)
}
