package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"follows/api/trusted"
	"follows/graph"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Codes of requests refused for their document under -trusted-only
// (docs/trusted-documents.md). PERSISTED_QUERY_NOT_FOUND is also what
// gqlgen's automatic persisted queries answer a hash they do not have.
const (
	CodePersistedQueryNotFound  = "PERSISTED_QUERY_NOT_FOUND"
	CodeTrustedDocumentRequired = "TRUSTED_DOCUMENT_REQUIRED"
)

// A document that is not trusted is refused as one that does not parse
// is: 400 to a client that accepts application/graphql-response+json.
// PERSISTED_QUERY_NOT_FOUND keeps gqlgen's kind (200 with either media
// type) when automatic persisted queries answer it, since Apollo Client
// stops sending hashes for good after a 400; refused here, under
// -trusted-only, it is 400 too (documentIDs.refuse).
func init() {
	errcode.RegisterErrorType(CodeTrustedDocumentRequired, errcode.KindProtocol)
}

// OpenTrustedDocuments loads the manifests at paths, checking each
// document against the schema (see package trusted).
func OpenTrustedDocuments(paths []string) (*trusted.Documents, error) {
	return trusted.Open(graph.Schema(), paths)
}

// documentIDs serves the trusted documents by the ids clients send in
// place of their text: Relay's doc_id (or id), GraphQL over HTTP's
// documentId, and Apollo's extensions.persistedQuery.sha256Hash. With
// only (-trusted-only), it refuses every request whose document is not
// one of them, before anything parses it. The HTTP requests are resolved
// in guardRequest, before the stream choice, which needs the text to see
// a subscription; the operations of a websocket, which carry Apollo's
// hash or a text, in the extension (trustedExtension).
type documentIDs struct {
	docs *trusted.Documents
	only bool
	m    *Metrics
}

// documentIDs is nil without trusted documents.
func (c Config) documentIDs(m *Metrics) *documentIDs {
	if c.Trusted == nil {
		return nil
	}
	return &documentIDs{docs: c.Trusted, only: c.TrustedOnly, m: m}
}

// decide says which trusted document a request runs: the one its id names
// (apq: sent as Apollo's hash, which gqlgen's automatic persisted queries
// also read), or the one whose text it sends. A nil document and a nil
// error let the request go on as it came: what every request is without
// -trusted-only, but for an id nothing else would know.
func (d *documentIDs) decide(id string, apq bool, text string) (*trusted.Document, *gqlerror.Error) {
	set := d.docs.Current()
	if doc := set.ByID(id); id != "" && doc != nil {
		switch {
		case text != "" && text != doc.Text && apq && !d.only:
			return nil, nil // automatic persisted queries check the hash
		case text != "" && text != doc.Text:
			return nil, codedError(CodeTrustedDocumentRequired, "the document sent is not the trusted document with the id %q: send the id alone", capLabel(id))
		}
		return doc, nil
	}
	switch {
	case id == "":
	case apq && !d.only:
		return nil, nil // automatic persisted queries may have it
	case !apq || text == "":
		return nil, codedError(CodePersistedQueryNotFound, "no trusted document has the id %q", capLabel(id))
	}
	// An unknown hash sent with a text, under -trusted-only: the text
	// decides, as Apollo Client's retry after PERSISTED_QUERY_NOT_FOUND
	// needs when the manifest's ids are not the hashes its link computes.
	if text == "" {
		return nil, nil // gqlgen says that a document is needed
	}
	// A text identical to a trusted one is as good as its id: Apollo
	// Client sends the text with the hash after PERSISTED_QUERY_NOT_FOUND.
	if doc := set.ByText(text); doc != nil {
		return doc, nil
	}
	if d.only {
		return nil, codedError(CodeTrustedDocumentRequired, "this server runs only the documents its apps were built with: send one by its id")
	}
	return nil, nil
}

func codedError(code, format string, args ...any) *gqlerror.Error {
	e := gqlerror.Errorf(format, args...)
	e.Extensions = map[string]any{"code": code}
	return e
}

// sentIDs are the members of a request that may carry a trusted
// document's id in place of its text: Relay's doc_id (or id, as its
// examples have it), and GraphQL over HTTP's documentId.
var sentIDs = []string{"doc_id", "documentId", "id"}

// request resolves r's document (body is a POST's, already read): the id
// of a trusted document becomes its text, which is all that gqlgen and
// the stream choice read. It answers, and reports false, when it refuses
// r.
func (d *documentIDs) request(w http.ResponseWriter, r *http.Request, body []byte) (*http.Request, []byte, bool) {
	if d == nil {
		return r, body, true
	}
	var sent struct {
		Query, DocID, DocumentID, ID string
		Hash                         string
	}
	var q url.Values
	if r.Method == http.MethodPost {
		var req struct {
			Query      string          `json:"query"`
			DocID      string          `json:"doc_id"`
			DocumentID string          `json:"documentId"`
			ID         string          `json:"id"`
			Extensions json.RawMessage `json:"extensions"`
		}
		// Decoded as gqlgen decodes it, matching names without regard to
		// case; postShape has checked the types of those it reads.
		if json.Unmarshal(body, &req) != nil && d.only {
			return r, body, d.refuse(w, r, codedError(CodeTrustedDocumentRequired, "the request's ids must be strings"))
		}
		sent.Query, sent.DocID, sent.DocumentID, sent.ID = req.Query, req.DocID, req.DocumentID, req.ID
		sent.Hash = persistedHash(req.Extensions)
	} else {
		q = r.URL.Query()
		sent.Query, sent.DocID, sent.DocumentID, sent.ID = q.Get("query"), q.Get("doc_id"), q.Get("documentId"), q.Get("id")
		sent.Hash = persistedHash(json.RawMessage(q.Get("extensions")))
	}
	id, apq := firstOf(sent.DocID, sent.DocumentID, sent.ID), false
	if id == "" {
		id, apq = sent.Hash, sent.Hash != ""
	}
	doc, err := d.decide(id, apq, sent.Query)
	switch {
	case err != nil:
		return r, body, d.refuse(w, r, err)
	case doc == nil || id == "":
		return r, body, true
	case r.Method == http.MethodPost:
		return r, withText(body, doc.Text), true
	}
	for _, name := range sentIDs {
		q.Del(name)
	}
	q.Set("query", doc.Text)
	if ext := q.Get("extensions"); ext != "" {
		q.Set("extensions", string(withoutHash(json.RawMessage(ext))))
	}
	r2 := *r
	u := *r.URL
	u.RawQuery = q.Encode()
	r2.URL = &u
	return &r2, body, true
}

// firstOf is the first of ids that is not empty.
func firstOf(ids ...string) string {
	for _, id := range ids {
		if id != "" {
			return id
		}
	}
	return ""
}

// refuse answers a request refused for its document, before it was parsed:
// 400 to a client that ranks application/graphql-response+json first, as
// GraphQL over HTTP asks of a request that cannot run, and 200 to one that
// accepts application/json, as gqlgen answers a document that does not
// parse (httpConventions).
func (d *documentIDs) refuse(w http.ResponseWriter, r *http.Request, e *gqlerror.Error) bool {
	code, _ := e.Extensions["code"].(string)
	d.m.error(code)
	media, status := mediaJSON, http.StatusOK
	if answerJSON(r) == mediaGraphQLResponse || negotiate(r.Header.Values("Accept")).stream {
		media, status = mediaGraphQLResponse, http.StatusBadRequest
	}
	w.Header().Set("Content-Type", media)
	w.WriteHeader(status)
	w.Write(errorBody(code, "%s", e.Message))
	return false
}

// persistedHash is Apollo's extensions.persistedQuery.sha256Hash in ext,
// or "".
func persistedHash(ext json.RawMessage) string {
	var e struct {
		PersistedQuery struct {
			Sha256Hash string `json:"sha256Hash"`
		} `json:"persistedQuery"`
	}
	if len(ext) == 0 || json.Unmarshal(ext, &e) != nil {
		return ""
	}
	return e.PersistedQuery.Sha256Hash
}

// withText is a POST body, valid JSON of one request, with text as its
// query in place of the id it sent: without the members that carry ids,
// so that nothing later reads the id again (gqlgen's automatic persisted
// queries would check the hash against the text, which is the hash of
// Apollo's ids only).
func withText(body []byte, text string) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	for k, v := range req {
		switch {
		case strings.EqualFold(k, "query"), strings.EqualFold(k, "doc_id"), strings.EqualFold(k, "documentId"), strings.EqualFold(k, "id"):
			delete(req, k)
		case strings.EqualFold(k, "extensions"):
			req[k] = withoutHash(v)
		}
	}
	req["query"], _ = json.Marshal(text)
	b, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return b
}

// withoutHash is a request's extensions without Apollo's persistedQuery.
func withoutHash(ext json.RawMessage) json.RawMessage {
	var e map[string]json.RawMessage
	if json.Unmarshal(ext, &e) != nil || e == nil {
		return ext
	}
	delete(e, "persistedQuery")
	b, err := json.Marshal(e)
	if err != nil {
		return ext
	}
	return b
}

// trustedExtension applies documentIDs' rules to every operation,
// whatever its transport: the operations of a websocket (Apollo's hash or
// a text; a subscribe message has no member for Relay's doc_id), and the
// HTTP requests documentIDs has resolved already. It records the trusted
// document's name for the metrics.
type trustedExtension struct{ ids *documentIDs }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = trustedExtension{}

func (trustedExtension) ExtensionName() string                   { return "TrustedDocuments" }
func (trustedExtension) Validate(graphql.ExecutableSchema) error { return nil }

// trustedStat names the trusted document's name in an operation's
// statistics.
const trustedStat = "TrustedDocument"

// MutateOperationParameters runs before the automatic persisted queries'.
func (t trustedExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	hash := ""
	if pq, ok := p.Extensions["persistedQuery"].(map[string]any); ok {
		hash, _ = pq["sha256Hash"].(string)
	}
	doc, err := t.ids.decide(hash, hash != "", p.Query)
	if err != nil || doc == nil {
		return err
	}
	if hash != "" {
		p.Query = doc.Text
		delete(p.Extensions, "persistedQuery")
	}
	graphql.GetOperationContext(ctx).Stats.SetExtension(trustedStat, doc)
	return nil
}

// trustedDocument is the trusted document the operation in ctx runs, or
// nil.
func trustedDocument(ctx context.Context) *trusted.Document {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	doc, _ := graphql.GetOperationContext(ctx).Stats.GetExtension(trustedStat).(*trusted.Document)
	return doc
}
