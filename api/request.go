package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"
)

// What makes a request one GraphQL request, checked by guardRequest before
// gqlgen decodes it: gqlgen's own error for a body it cannot decode names
// the Go type it decoded into and quotes the whole body back.

// requestMembers are the members of a GraphQL request and the kind of
// JSON value each must be, when present and not null.
var requestMembers = map[string]byte{"query": '"', "operationName": '"', "variables": '{', "extensions": '{'}

var kindName = map[byte]string{'"': "a string", '{': "a JSON object"}

// postShape says what keeps a POST body, valid JSON, from being one
// GraphQL request: an object whose query and operationName are strings
// and whose variables and extensions are objects, each absent or null. It
// names no Go type and quotes nothing of the body; "" means the body is
// one request. It reads the body's top level only, once, without decoding
// the values: a body can be a megabyte.
func postShape(body []byte) string {
	i := skipSpace(body, 0)
	switch {
	case i < len(body) && body[i] == '[':
		return "the request body is a JSON array: batched requests are not supported; send one request, a JSON object, per POST"
	case i >= len(body) || body[i] != '{':
		return `the request body must be a JSON object such as {"query": "{ viewer { id } }"}`
	}
	for i = skipSpace(body, i+1); i < len(body) && body[i] == '"'; {
		end := skipValue(body, i)
		var key string
		if json.Unmarshal(body[i:end], &key) != nil {
			return "the request body is not one GraphQL request"
		}
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return "the request body is not one GraphQL request"
		}
		i = skipSpace(body, i+1)
		end = skipValue(body, i)
		for name, kind := range requestMembers {
			// encoding/json, and so gqlgen, match member names without
			// regard to case.
			if strings.EqualFold(key, name) && i < len(body) && body[i] != 'n' && body[i] != kind {
				return fmt.Sprintf("the request's %s must be %s", name, kindName[kind])
			}
		}
		if i = skipSpace(body, end); i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return ""
}

// getShape is postShape for a GET's query string, whose variables and
// extensions are JSON objects.
func getShape(rawQuery string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "the query string is not URL-encoded"
	}
	for _, name := range []string{"variables", "extensions"} {
		v := []byte(q.Get(name))
		if len(v) == 0 {
			continue
		}
		if i := skipSpace(v, 0); !json.Valid(v) || (v[i] != '{' && v[i] != 'n') {
			return fmt.Sprintf("the query string's %s must be %s", name, kindName['{'])
		}
	}
	return ""
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns where the JSON value that starts at b[i] ends, in a
// document already known to be valid.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the object a scalar is in
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// requestOperation says whether body, a POST body that postShape passed,
// asks for a subscription: the operation its operationName names, or its
// only one. known is false when the body does not say (a persisted query
// sent by its hash alone, a document that does not lex, a name it lacks).
// It reads the document's tokens without parsing it, so that a query
// that will not be a stream costs no syntax tree here, and one that does
// not mention subscriptions no scan.
func requestOperation(body []byte) (subscription, known bool) {
	var req struct {
		Query         *string `json:"query"`
		OperationName *string `json:"operationName"`
	}
	if json.Unmarshal(body, &req) != nil || req.Query == nil || *req.Query == "" {
		return false, false
	}
	name := ""
	if req.OperationName != nil {
		name = *req.OperationName
	}
	if !strings.Contains(*req.Query, "subscription") {
		return false, true
	}
	ops, ok := operationKinds(*req.Query)
	if !ok {
		return false, false
	}
	kind, ok := ops[name]
	if name == "" && len(ops) == 1 {
		for _, k := range ops {
			kind, ok = k, true
		}
	}
	return kind == "subscription", ok
}

// operationKinds maps the operations of a GraphQL document, by name (""
// for an anonymous one), to their kinds: query, mutation or subscription.
// It follows only the top level of the document: what starts a
// definition, its name, and where its selection set ends; braces inside
// parentheses (object values among variables' defaults and arguments)
// do not end one.
func operationKinds(doc string) (map[string]string, bool) {
	ops := map[string]string{}
	l := lexer.New(&ast.Source{Input: doc})
	const (
		start   = iota // before a definition
		keyword        // after query, mutation or subscription: its name may follow
		header         // the rest of a definition's header
	)
	state, kind, name, depth, parens := start, "", "", 0, 0
	for {
		tok, err := l.ReadToken()
		if err != nil {
			return nil, false
		}
		switch {
		case tok.Kind == lexer.EOF:
			return ops, depth == 0 && parens == 0
		case tok.Kind == lexer.Comment:
		case tok.Kind == lexer.ParenL:
			parens++
		case tok.Kind == lexer.ParenR:
			parens--
		case parens > 0:
		case tok.Kind == lexer.BraceL:
			if depth == 0 {
				if state == start {
					kind = "query" // the shorthand: a selection set alone
				}
				if kind != "" {
					ops[name] = kind
				}
			}
			depth++
		case tok.Kind == lexer.BraceR:
			if depth--; depth == 0 {
				state, kind, name = start, "", ""
			}
		case depth > 0:
		case state == start && tok.Kind == lexer.Name:
			switch tok.Value {
			case "query", "mutation", "subscription":
				state, kind = keyword, tok.Value
			default: // a fragment, or what gqlgen will refuse
				state = header
			}
		case state == keyword && tok.Kind == lexer.Name:
			state, name = header, tok.Value
		default:
			state = header
		}
	}
}
