package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
)

// byDocID sends the trusted document id as Relay does, and says what
// went wrong, "" when it ran.
func byDocID(url, id string) string {
	resp, err := http.Post(url+"/graphql", "application/json", strings.NewReader(`{"doc_id": "`+id+`"}`))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Data   json.RawMessage
		Errors []any
	}
	if json.Unmarshal(b, &r) != nil || resp.StatusCode != 200 || len(r.Errors) > 0 || len(r.Data) == 0 {
		return string(b)
	}
	return ""
}

// The server reloads its trusted documents on SIGHUP while requests run,
// dropping none; a manifest that no longer loads leaves the documents in
// force, says why in the log and counts the failure in /metrics; and
// under -trusted-only GraphiQL is off by default.
func TestTrustedDocumentsReloadOnHangup(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "persisted.json")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(manifest, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"a": "query A { users(first: 1) { totalCount } }"}`)
	cmd, url, lines := startProcess(t, "-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "follows.db"), "-secret", testSecret,
		"-trusted-documents", manifest, "-trusted-only")

	if resp, err := http.Get(url + "/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GraphiQL under -trusted-only: %v %v", resp, err)
	}
	if msg := byDocID(url, "b"); !strings.Contains(msg, "PERSISTED_QUERY_NOT_FOUND") {
		t.Fatalf("b before it was listed: %s", msg)
	}

	stop := apitest.Meanwhile(4, func() string { return byDocID(url, "a") })
	write(`{"a": "query A { users(first: 1) { totalCount } }", "b": "query B { users(first: 2) { totalCount } }"}`)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLogLine(t, lines, "trusted documents reloaded", 10*time.Second)
	if msg := byDocID(url, "b"); msg != "" {
		t.Errorf("b after the reload: %s", msg)
	}

	write(`{"a": "query A { users(first: 1) { nope } }"}`)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLogLine(t, lines, "trusted documents not reloaded.*nope", 10*time.Second)
	if failed := stop(); len(failed) > 0 {
		t.Errorf("%d requests failed across the reloads, the first: %s", len(failed), failed[0])
	}
	for _, id := range []string{"a", "b"} {
		if msg := byDocID(url, id); msg != "" {
			t.Errorf("%s after a failed reload: %s", id, msg)
		}
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`follows_trusted_documents_reloads_total{result="error"} 1`, `follows_trusted_documents_reloads_total{result="ok"} 1`} {
		if !bytes.Contains(metrics, []byte(m)) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	exitLog(t, cmd, lines, syscall.SIGTERM, 30*time.Second)
}

// A server is not started with -trusted-only and nothing to trust, nor
// with a manifest that does not load: the error names the file and the
// document at fault.
func TestTrustedDocumentsRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "persisted.json")
	os.WriteFile(bad, []byte(`{"x1": "query Q { viewer { nope } }"}`), 0o644)
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-trusted-only"}, []string{"-trusted-documents"}},
		{[]string{"-trusted-documents", bad}, []string{bad, `id "x1"`, "nope"}},
	} {
		args := append([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "follows.db"), "-secret", testSecret}, tc.args...)
		err := run(t.Context(), args, io.Discard, io.Discard, noEnv)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want one saying %q", tc.args, err, w)
			}
		}
	}
}

// Under -trusted-only GraphiQL is off unless -no-playground is given, on
// the command line or in the environment; without it, as it was.
func TestTrustedOnlyGraphiQLDefault(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "persisted.json")
	os.WriteFile(manifest, []byte(`{"a": "query A { users(first: 1) { totalCount } }"}`), 0o644)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		off  bool
	}{
		{[]string{"-trusted-only"}, nil, true},
		{[]string{"-trusted-only", "-no-playground=false"}, nil, false},
		{[]string{"-trusted-only"}, map[string]string{"FOLLOWS_NO_PLAYGROUND": "false"}, false},
		{nil, nil, false},
		{[]string{"-no-playground"}, nil, true},
	} {
		s, _, err := parseServer(append([]string{"-trusted-documents", manifest}, tc.args...), tc.env)
		if err != nil {
			t.Fatal(err)
		}
		stop, err := s.openTrusted(slog.New(slog.DiscardHandler), api.NewMetrics(""))
		if err != nil {
			t.Fatal(err)
		}
		stop()
		if s.api.NoPlayground != tc.off {
			t.Errorf("%v %v: GraphiQL off %v, want %v", tc.args, tc.env, s.api.NoPlayground, tc.off)
		}
	}
}
