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
// sees it, with a GraphQL-shaped error that carries a code: bodies over
// maxBody (413), query strings over it (414), POST bodies that are not
// JSON (415, 400). It also gives every request a deadline, which cancels
// its SQL when it passes and cuts off a body still arriving then (408).
func guardRequest(maxBody int64, timeout time.Duration, m *Metrics) func(http.Handler) http.Handler {
	requestError := func(w http.ResponseWriter, status int, format string, args ...any) {
		m.error(CodeBadRequest)
		requestError(w, status, format, args...)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			deadline := time.Now().Add(timeout)
			if r.ContentLength > maxBody {
				requestError(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
				return
			}
			if int64(len(r.URL.RawQuery)) > maxBody {
				// A GET carries its request in the query string.
				requestError(w, http.StatusRequestURITooLong, "the query string is longer than %d bytes", maxBody)
				return
			}
			if r.Method == http.MethodPost {
				mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				if mt != "application/json" && mt != "application/graphql-response+json" {
					requestError(w, http.StatusUnsupportedMediaType, "send the request as Content-Type: application/json")
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
					requestError(w, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
					return
				case errors.Is(err, os.ErrDeadlineExceeded):
					requestError(w, http.StatusRequestTimeout, "the request body did not arrive within %v", timeout)
					return
				case err != nil:
					requestError(w, http.StatusBadRequest, "the request body could not be read")
					return
				case !json.Valid(body):
					requestError(w, http.StatusBadRequest, "the request body is not valid JSON")
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			ctx, cancel := context.WithDeadline(r.Context(), deadline)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// CodeBadRequest marks requests refused before they were read as GraphQL.
const CodeBadRequest = "BAD_REQUEST"

func requestError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{
		"message":    fmt.Sprintf(format, args...),
		"extensions": map[string]any{"code": CodeBadRequest},
	}}})
}

// cors lets browsers on the listed origins call the API. With no origins it
// adds nothing, so browsers keep other sites' pages from using a visitor's
// credentials here.
func cors(origins string) func(http.Handler) http.Handler {
	var allowed []string
	for _, o := range strings.Split(origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			allowed = append(allowed, o)
		}
	}
	if len(allowed) == 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	all := slices.Contains(allowed, "*")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin != "" && (all || slices.Contains(allowed, origin)) {
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", origin)
				h.Add("Vary", "Origin")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Expose-Headers", "Retry-After")
				h.Set("Access-Control-Max-Age", "600")
				if r.Method == http.MethodOptions {
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// httpConventions adjusts gqlgen's answers to GraphQL over HTTP: a
// request that could not run answers 200 when the client accepts only
// application/json (whose clients read errors from the body), and has no
// "data" entry when it accepts application/graphql-response+json; a
// mutation sent with GET is 405 Method Not Allowed, naming POST.
func httpConventions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &conventionWriter{ResponseWriter: w, get: r.Method == http.MethodGet}
		next.ServeHTTP(cw, r)
		if cw.held == nil {
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
}

func (w *conventionWriter) WriteHeader(code int) {
	switch ct := w.Header().Get("Content-Type"); {
	case code == http.StatusUnprocessableEntity && ct == "application/json":
		code = http.StatusOK
	case code >= 400 && ct == "application/graphql-response+json":
		w.held = &bytes.Buffer{}
		w.Header().Del("Content-Length")
	case code == http.StatusNotAcceptable && w.get:
		// gqlgen's answer to a GET that is not a query.
		w.Header().Set("Allow", "POST")
		code = http.StatusMethodNotAllowed
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
			log.Info("request", "operation", info.operation, "method", r.Method, "status", sw.status,
				"ms", float64(time.Since(start).Microseconds())/1000, "sql", st.Queries(), "sqlMs", float64(st.Duration().Microseconds())/1000)
		})
	}
}

// requestInfo carries what the GraphQL layer learns about a request out to
// the request log.
type requestInfo struct{ operation string }

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
