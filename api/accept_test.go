package api

import "testing"

func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		accept string
		want   answerForm
	}{
		{"", answerForm{streamable: true}},
		// urql's default: JSON for a query, a stream for a subscription.
		{"multipart/mixed, application/graphql-response+json, application/graphql+json, application/json, text/event-stream",
			answerForm{json: mediaGraphQLResponse, streamable: true}},
		{"application/json", answerForm{json: mediaJSON}},
		{"application/json; charset=utf-8", answerForm{json: mediaJSON}},
		{"Application/JSON", answerForm{json: mediaJSON}},
		{"application/graphql-response+json, application/json;q=0.9", answerForm{json: mediaGraphQLResponse}},
		{"application/json;q=0.9, application/graphql-response+json", answerForm{json: mediaGraphQLResponse}},
		{"application/json, application/graphql-response+json", answerForm{json: mediaJSON}},
		// Wildcards: application/json, as gqlgen gave them; a stream
		// for a subscription only.
		{"*/*", answerForm{json: mediaJSON, streamable: true}},
		{"application/*", answerForm{json: mediaJSON}},
		{"text/*", answerForm{streamable: true}},
		{"*/*;q=0.1, application/graphql-response+json;q=0.1", answerForm{json: mediaGraphQLResponse, streamable: true}},
		// The most specific range gives a type its q-value.
		{"application/json;q=0, application/*", answerForm{json: mediaGraphQLResponse}},
		{"*/*, text/event-stream;q=0", answerForm{json: mediaJSON}},
		// A stream ranked first.
		{"text/event-stream", answerForm{stream: true, streamable: true}},
		{"text/event-stream, application/json", answerForm{stream: true, streamable: true}},
		{"application/json;q=0.5, text/event-stream", answerForm{stream: true, streamable: true}},
		{"text/event-stream;q=0.5, application/json", answerForm{json: mediaJSON, streamable: true}},
		{"text/event-stream;q=0, application/json", answerForm{json: mediaJSON}},
		// Malformed ranges and q-values are skipped.
		{"text/event-stream;q=2, application/json", answerForm{json: mediaJSON}},
		{"text/event-stream;q=x, application/json", answerForm{json: mediaJSON}},
		{"*/json, json, text/event-stream;q=0.1", answerForm{stream: true, streamable: true}},
		{"text/html", answerForm{}},
	} {
		var accept []string
		if c.accept != "" {
			accept = []string{c.accept}
		}
		if got := negotiate(accept); got != c.want {
			t.Errorf("Accept %q: %+v, want %+v", c.accept, got, c.want)
		}
	}
	// Several Accept header lines are one list.
	if got := negotiate([]string{"text/event-stream;q=0.5", "application/json"}); got != (answerForm{json: mediaJSON, streamable: true}) {
		t.Errorf("two Accept lines: %+v", got)
	}
}

func TestRequestOperation(t *testing.T) {
	for _, c := range []struct {
		body                string
		subscription, known bool
	}{
		{`{"query": "{ viewer { id } }"}`, false, true},
		{`{"query": "query Q { viewer { id } }"}`, false, true},
		{`{"query": "subscription { followEvents { event { type } } }"}`, true, true},
		{`{"query": "subscription S($after: String) @live { followEvents(after: $after) { event { type } } }"}`, true, true},
		{`{"query": "  # a comment\n subscription\n{ followEvents { event { type } } }"}`, true, true},
		// A field named subscription is not one.
		{`{"query": "{ subscription: viewer { id } }"}`, false, true},
		// Of several operations, the one named.
		{`{"operationName": "S", "query": "query Q { viewer { id } } subscription S { followEvents { event { type } } }"}`, true, true},
		{`{"operationName": "Q", "query": "query Q { viewer { id } } subscription S { followEvents { event { type } } }"}`, false, true},
		{`{"query": "query Q { viewer { id } } subscription S { followEvents { event { type } } }"}`, false, false},
		{`{"operationName": "X", "query": "subscription S { followEvents { event { type } } }"}`, false, false},
		// Braces in a variable's default are not a selection set.
		{`{"operationName": "S", "query": "query Q($f: In = {a: {b: 1}}) { viewer { id } } subscription S { followEvents { event { type } } }"}`, true, true},
		// Fragments are not operations.
		{`{"query": "fragment F on FollowEvent { event { type } } subscription { followEvents { ...F } }"}`, true, true},
		// What does not say: a persisted query's hash alone, a document
		// that does not lex or is cut short.
		{`{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}}`, false, false},
		{`{"query": "subscription { followEvents { \"unterminated } }"}`, false, false},
		{`{"query": "subscription { followEvents { event { type }"}`, false, false},
	} {
		sub, known := requestOperation([]byte(c.body))
		if sub != c.subscription || known != c.known {
			t.Errorf("%s: subscription %v known %v, want %v %v", c.body, sub, known, c.subscription, c.known)
		}
	}
}
