package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
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
