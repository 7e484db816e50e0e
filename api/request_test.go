package api

import "testing"

// postShape reads the top level of any valid JSON body right, however its
// values nest and whatever they quote.
func TestPostShape(t *testing.T) {
	for body, want := range map[string]string{
		`{}`:                "",
		`{"query":"{ a }"}`: "",
		` { "query" : "{ a }" , "variables" : { "x" : [1, {"y": "}]"}] } , "extensions": null } `: "",
		`{"a":1,"query":"q"}`: "",
		`{"a":1}`:             "",
		`{"a":[1,2],"b":{"c":"\"}"},"operationName":"A"}`:                        "",
		`{"query":"a\"}b","variables":{}}`:                                       "",
		`{"query":null,"variables":null,"operationName":null,"extensions":null}`: "",
		`{"query":5}`:                             "the request's query must be a string",
		`{"Query":true}`:                          "the request's query must be a string",
		`{"x":"\"query\":5","variables":[]}`:      "the request's variables must be a JSON object",
		`{"operationName":{}}`:                    "the request's operationName must be a string",
		`{"a":{"variables":[]},"extensions":"e"}`: "the request's extensions must be a JSON object",
		`[{"query":"{ a }"}]`:                     "the request body is a JSON array: batched requests are not supported; send one request, a JSON object, per POST",
		`"{ a }"`:                                 `the request body must be a JSON object such as {"query": "{ viewer { id } }"}`,
		`null`:                                    `the request body must be a JSON object such as {"query": "{ viewer { id } }"}`,
		` 7 `:                                     `the request body must be a JSON object such as {"query": "{ viewer { id } }"}`,
	} {
		if got := postShape([]byte(body)); got != want {
			t.Errorf("postShape(%s) = %q, want %q", body, got, want)
		}
	}
}
