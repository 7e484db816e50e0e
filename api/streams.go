package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// sseTransport is gqlgen's server-sent events transport for the POSTs
// guardRequest found to be streams (it marks them Accept:
// text/event-stream alone), with what that lacks: the connection's write
// timeout lifted and each write bounded by cfg.WriteTimeout instead, and
// a body that does not decode refused with a coded error of a bounded
// size. gqlgen's own answer to such a body names the Go type it decoded
// into, quotes the whole body back, and writes both to the standard
// logger; guardRequest refuses such bodies first, and this holds
// whatever reaches the transport another way.
type sseTransport struct {
	sse transport.SSE
	cfg StreamConfig
	log *slog.Logger
	m   *Metrics
}

var _ graphql.Transport = sseTransport{}

func newSSETransport(cfg StreamConfig, log *slog.Logger, m *Metrics) sseTransport {
	return sseTransport{sse: transport.SSE{KeepAlivePingInterval: cfg.KeepAlive}, cfg: cfg, log: log, m: m}
}

func (t sseTransport) Supports(r *http.Request) bool {
	return r.Header.Get("Accept") == mediaEventStream && t.sse.Supports(r)
}

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		err = dec.Decode(&graphql.RawParams{})
	}
	if err != nil {
		t.m.error(CodeBadRequest)
		// The body's size only: never its text, which the client
		// chose, nor the decoder's message, which quotes it.
		t.log.Debug("server-sent events: body refused", "bytes", len(body))
		requestError(w, http.StatusBadRequest, CodeBadRequest, "the request body is not one GraphQL request")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	t.sse.Do(&streamWriter{ResponseWriter: w, rc: rc, timeout: t.cfg.WriteTimeout}, r, exec)
}
