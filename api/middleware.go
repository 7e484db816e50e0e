package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"follows/db"
)

// chain wraps h in the middleware mw, the first outermost.
func chain(h http.Handler, mw ...func(http.Handler) http.Handler) http.Handler {
	for _, m := range slices.Backward(mw) {
		h = m(h)
	}
	return h
}

// guardRequest turns away what cannot be a GraphQL request before gqlgen
// sees it, with a GraphQL-shaped error that carries a code: methods other
// than GET, POST and OPTIONS (405 METHOD_NOT_ALLOWED), bodies over maxBody
// (413), query strings over it (414), POST bodies that are not JSON (415,
// 400) or not one request (400: a JSON array, as batching clients send),
// and GET query strings that do not decode (400). It also gives every
// request a deadline, which cancels its SQL when it passes and cuts off a
// body still arriving then (408); a POST that turns out to open a stream
// of server-sent events (streamChoice) has read its body by that
// deadline, and has none after, and a subscription whose client accepts
// no stream is refused (406). It settles the answer's media type by the
// client's Accept header, for gqlgen's transports to follow. ids, if not
// nil, put the text of a trusted document sent by its id in its place, or
// refuse a document not trusted (documentIDs).
func guardRequest(maxBody int64, timeout time.Duration, m *Metrics, ids *documentIDs) func(http.Handler) http.Handler {
	refuse := func(w http.ResponseWriter, status int, format string, args ...any) {
		m.error(CodeBadRequest)
		requestError(w, status, CodeBadRequest, format, args...)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			deadline := time.Now().Add(timeout)
			switch r.Method {
			case http.MethodGet, http.MethodPost, http.MethodOptions:
			default:
				m.error(CodeMethodNotAllowed)
				w.Header().Set("Allow", "GET, POST, OPTIONS")
				requestError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "send GraphQL requests with POST, or queries with GET")
				return
			}
			if r.ContentLength > maxBody {
				refuse(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
				return
			}
			if int64(len(r.URL.RawQuery)) > maxBody {
				// A GET carries its request in the query string.
				refuse(w, http.StatusRequestURITooLong, "the query string is longer than %d bytes", maxBody)
				return
			}
			if r.Method == http.MethodGet {
				if msg := getShape(r.URL.RawQuery); msg != "" {
					refuse(w, http.StatusBadRequest, "%s", msg)
					return
				}
				var ok bool
				if r, _, ok = ids.request(w, r, nil); !ok {
					return
				}
			}
			if r.Method == http.MethodPost {
				mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				if mt != "application/json" && mt != "application/graphql-response+json" {
					refuse(w, http.StatusUnsupportedMediaType, "send the request as Content-Type: application/json")
					return
				}
				// However slowly a client sends, its body ends at the
				// deadline. The connection's read deadline is lifted once
				// the body is in, or it would end the request's context when
				// it passed; it stays on a body cut off, so that net/http
				// does not wait for the rest of it.
				conn := http.NewResponseController(w)
				conn.SetReadDeadline(deadline)
				body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
				if err == nil {
					conn.SetReadDeadline(time.Time{})
				}
				var tooLarge *http.MaxBytesError
				switch {
				case errors.As(err, &tooLarge):
					refuse(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
					return
				case errors.Is(err, os.ErrDeadlineExceeded):
					refuse(w, http.StatusRequestTimeout, "the request body did not arrive within %v", timeout)
					return
				case err != nil:
					refuse(w, http.StatusBadRequest, "the request body could not be read")
					return
				case !json.Valid(body):
					refuse(w, http.StatusBadRequest, "the request body is not valid JSON")
					return
				}
				if msg := postShape(body); msg != "" {
					refuse(w, http.StatusBadRequest, "%s", msg)
					return
				}
				var ok bool
				if r, body, ok = ids.request(w, r, body); !ok {
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				switch stream, subscription := streamChoice(r, body); {
				case stream:
					// A server-sent events stream, known only now that
					// its body is in: its read deadline is lifted, and
					// it has no deadline of its own (sseTransport bounds
					// its writes instead).
					next.ServeHTTP(w, withAccept(r, mediaEventStream))
					return
				case subscription:
					// gqlgen would wait for its first event until the
					// deadline, then answer null.
					refuse(w, http.StatusNotAcceptable, "a subscription is answered as a stream: send it with Accept: text/event-stream, or over a websocket")
					return
				}
			}
			ctx, cancel := context.WithDeadline(r.Context(), deadline)
			defer cancel()
			next.ServeHTTP(w, withAccept(r.WithContext(ctx), answerJSON(r)))
		})
	}
}

// streamChoice says whether a POST, whose body has been read, is to be
// answered as a stream of server-sent events: when its client ranks
// text/event-stream above JSON (graphql-sse, even for a query), or names
// it and sends a subscription (urql's default Accept lists it last, after
// the JSON types, for every operation). A query or mutation whose client
// ranks JSON first gets one JSON answer. subscription reports a
// subscription whose client accepts no stream. The operation's kind is
// read from the body, here before gqlgen parses it: a persisted query
// sent by its hash alone does not say, and is a stream only when the
// client ranks the stream first.
func streamChoice(r *http.Request, body []byte) (stream, subscription bool) {
	f := negotiate(r.Header.Values("Accept"))
	if f.stream || !bytes.Contains(body, []byte("subscription")) {
		return f.stream, false
	}
	sub, _ := requestOperation(body)
	return sub && f.streamable, sub && !f.streamable
}

// answerJSON is the Accept header that gets a one-shot answer the JSON
// type its client ranks first, "" to leave the header as it is: gqlgen
// takes the first JSON type it finds, whatever its q-value, and its
// server-sent events transport any Accept that mentions
// text/event-stream.
func answerJSON(r *http.Request) string {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return "" // gqlgen's default: application/json
	}
	if f := negotiate(accept); f.json != "" {
		return f.json
	}
	// Nothing the server gives is acceptable: gqlgen's answer to that.
	return mediaGraphQLResponse
}

// withAccept is r with its Accept header replaced by media, or r when
// media is "".
func withAccept(r *http.Request, media string) *http.Request {
	if media == "" {
		return r
	}
	r2 := *r
	r2.Header = r.Header.Clone()
	r2.Header.Set("Accept", media)
	return &r2
}

// Codes of requests refused before they were read as GraphQL.
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
)

func requestError(w http.ResponseWriter, status int, code, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorBody(code, format, args...))
}

// errorBody is a GraphQL response of one error with a code.
func errorBody(code, format string, args ...any) []byte {
	b, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{
		"message":    fmt.Sprintf(format, args...),
		"extensions": map[string]any{"code": code},
	}}})
	return append(b, '\n')
}

// DefaultCORSHeaders are the request headers that a page on an allowed
// origin may send, unless -cors-headers says otherwise: the bearer token
// and JSON, and what common browser clients add of their own. Apollo
// Client names itself (apollographql-client-name, -version) and its CSRF
// guard asks for a preflight (apollo-require-preflight); Apollo and urql
// list the responses they accept (Accept, which is not safelisted when
// long); tracing libraries propagate traces (Sentry's sentry-trace and
// baggage, the W3C traceparent and tracestate that OpenTelemetry sends).
// Relay and urql send nothing else; graphql-request sends what the app
// gives it.
const DefaultCORSHeaders = "Authorization, Content-Type, Accept, " +
	"apollographql-client-name, apollographql-client-version, apollo-require-preflight, " +
	"sentry-trace, baggage, traceparent, tracestate"

// cors lets browsers on the listed origins call the API, sending the
// request headers listed (DefaultCORSHeaders when none are; * allows any a
// preflight asks for). With no origins it adds nothing, so browsers keep
// other sites' pages from using a visitor's credentials here. With
// origins, every answer varies on Origin, refusals and answers to other
// origins included, so that a cache between the browser and the server
// never hands one origin's answer to another.
func cors(origins, headers string) func(http.Handler) http.Handler {
	allowed := list(origins)
	if len(allowed) == 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	all := slices.Contains(allowed, "*")
	allowHeaders := strings.Join(list(headers), ", ")
	if allowHeaders == "" {
		allowHeaders = DefaultCORSHeaders
	}
	anyHeader := allowHeaders == "*"
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			if origin != "" && (all || slices.Contains(allowed, origin)) {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Expose-Headers", "Retry-After")
				h.Set("Access-Control-Max-Age", "600")
				if r.Method == http.MethodOptions {
					if anyHeader {
						// * lets a browser send any header but Authorization;
						// naming what the preflight asks for lets it send that too.
						h.Add("Vary", "Access-Control-Request-Headers")
						h.Set("Access-Control-Allow-Headers", r.Header.Get("Access-Control-Request-Headers"))
					} else {
						h.Set("Access-Control-Allow-Headers", allowHeaders)
					}
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// list splits a comma-separated flag value, dropping blanks.
func list(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// httpConventions adjusts gqlgen's answers to GraphQL over HTTP: a
// request that could not run answers 200 when the client accepts only
// application/json (whose clients read errors from the body), and has no
// "data" entry when it accepts application/graphql-response+json; a
// mutation sent with GET is 405 Method Not Allowed, naming POST, with a
// METHOD_NOT_ALLOWED error in place of gqlgen's uncoded one.
func httpConventions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &conventionWriter{ResponseWriter: w, get: r.Method == http.MethodGet}
		next.ServeHTTP(cw, r)
		if cw.held == nil {
			return
		}
		if cw.replace != nil {
			w.Write(cw.replace)
			return
		}
		var body map[string]json.RawMessage
		if json.Unmarshal(cw.held.Bytes(), &body) == nil {
			delete(body, "data")
			json.NewEncoder(w).Encode(body)
		} else {
			w.Write(cw.held.Bytes())
		}
	})
}

type conventionWriter struct {
	http.ResponseWriter
	get  bool
	held *bytes.Buffer // the body of a request that could not run, to rewrite
	// replace, if set, is sent in place of the held body.
	replace []byte
}

func (w *conventionWriter) WriteHeader(code int) {
	switch ct := w.Header().Get("Content-Type"); {
	case code == http.StatusNotAcceptable && w.get:
		// gqlgen's answer to a GET that is not a query.
		w.held = &bytes.Buffer{}
		w.replace = errorBody(CodeMethodNotAllowed, "a mutation must be sent with POST; GET may carry only queries")
		w.Header().Del("Content-Length")
		w.Header().Set("Allow", "POST")
		code = http.StatusMethodNotAllowed
	case code == http.StatusUnprocessableEntity && ct == "application/json":
		code = http.StatusOK
	case code >= 400 && ct == "application/graphql-response+json":
		w.held = &bytes.Buffer{}
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *conventionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *conventionWriter) Write(b []byte) (int, error) {
	if w.held != nil {
		return w.held.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// logRequests counts each request's SQL statements (db.WithStats) and logs
// one line per request: operation, status, duration, SQL statements.
func logRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx, st := db.WithStats(r.Context())
			info := &requestInfo{}
			ctx = context.WithValue(ctx, requestInfoKey{}, info)
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r.WithContext(ctx))
			// net/http takes a method as long as the request line; the
			// log keeps as much of it as of an operation's name.
			log.Info("request", "operation", info.op(), "method", capLabel(r.Method), "status", sw.status,
				"ms", float64(time.Since(start).Microseconds())/1000, "sql", st.Queries(), "sqlMs", float64(st.Duration().Microseconds())/1000)
		})
	}
}

// requestInfo carries what the GraphQL layer learns about a request out to
// the request log. A websocket's subscriptions run in goroutines of their
// own, which may still be answering when the request's handler returns,
// so the field is read and written under a lock (the race detector found
// the unguarded field).
type requestInfo struct {
	mu        sync.Mutex
	operation string
}

func (i *requestInfo) setOp(op string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.operation = op
}

func (i *requestInfo) op() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.operation
}

type requestInfoKey struct{}

func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
