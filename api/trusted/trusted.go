// Package trusted holds the documents an operator trusts: the operations
// client builds listed in their persisted-query manifests, each by the id
// its client sends in place of the text. It reads the three manifests
// client tools write, told apart by their shape:
//
//   - relay-compiler's persistConfig file: a JSON object of id to text,
//     the id the MD5 of the text unless the config chose another hash;
//   - GraphQL Code Generator's client preset persisted-documents.json: the
//     same shape, the id the SHA-1 or SHA-256 of the text;
//   - @apollo/generate-persisted-query-manifest's manifest:
//     {"format": "apollo-persisted-query-manifest", "version": 1,
//     "operations": [{"id", "name", "type", "body"}]}, the id the SHA-256
//     of the body unless the app's createOperationId chose another.
//
// An id is whatever the manifest says: the client was built with the same
// ids. Every text is parsed and validated against the schema as it is
// loaded, so that a manifest from another version of the API is refused
// when the server starts, not when a user first runs the operation.
package trusted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// Document is one trusted operation.
type Document struct {
	ID string
	// Name is the manifest's name for it (Apollo's), else its operation's
	// name, "" for an anonymous one: what metrics label it with.
	Name string
	Text string
	// File is the manifest it came from.
	File string
}

// Set is the trusted documents of a set of manifests, by id and by text.
// It is not changed once loaded; Documents swaps a whole new one in.
type Set struct {
	byID   map[string]*Document
	byText map[string]*Document
}

// ByID is the document with the id a client sent, or nil. An id sent with
// an algorithm's prefix ("sha256:…", as GraphQL over HTTP's persisted
// documents appendix writes it) also finds the document listed without.
func (s *Set) ByID(id string) *Document {
	if d := s.byID[id]; d != nil {
		return d
	}
	if _, hash, ok := strings.Cut(id, ":"); ok {
		return s.byID[hash]
	}
	return nil
}

// ByText is the document whose text is exactly text, or nil.
func (s *Set) ByText(text string) *Document { return s.byText[text] }

// Len is the number of documents.
func (s *Set) Len() int { return len(s.byID) }

// Load reads the manifests at paths and checks each document against
// schema. An error names the file and the line (a file that is not JSON)
// or the entry (an entry of the wrong shape, a document that does not
// validate, an id two files give different texts).
func Load(schema *ast.Schema, paths []string) (*Set, error) {
	s := &Set{byID: map[string]*Document{}, byText: map[string]*Document{}}
	for _, path := range paths {
		docs, err := readManifest(path)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if err := s.add(schema, d); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *Set) add(schema *ast.Schema, d *Document) error {
	if prev := s.byID[d.ID]; prev != nil {
		if prev.Text != d.Text {
			return fmt.Errorf("%s: id %q: %s lists it with another text", d.File, d.ID, prev.File)
		}
		return nil
	}
	// nil: the default rules, which gqlgen validates requests with.
	doc, errs := gqlparser.LoadQueryWithRules(schema, d.Text, nil)
	if len(errs) > 0 {
		return fmt.Errorf("%s: id %q%s: the document does not validate against the schema: %v", d.File, d.ID, named(d.Name), errs[0])
	}
	if len(doc.Operations) == 0 {
		return fmt.Errorf("%s: id %q: the document has no operation", d.File, d.ID)
	}
	if d.Name == "" {
		// A copy: the parsed name is a slice of the text.
		d.Name = strings.Clone(doc.Operations[0].Name)
	}
	s.byID[d.ID] = d
	if _, dup := s.byText[d.Text]; !dup {
		s.byText[d.Text] = d
	}
	return nil
}

func named(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// apolloFormat is what Apollo's manifest says its format is.
const apolloFormat = "apollo-persisted-query-manifest"

// readManifest reads one manifest, of whichever of the shapes it has.
func readManifest(path string) ([]*Document, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trusted documents: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("%s: %s", path, jsonError(b, err))
	}
	if _, ok := top["operations"]; ok {
		return readApollo(path, b)
	}
	if _, ok := top["format"]; ok {
		return nil, fmt.Errorf("%s: a manifest with a \"format\" but no \"operations\": Apollo's manifest lists its documents under \"operations\"", path)
	}
	// Relay's and the client preset's: id to text.
	var docs []*Document
	for id, raw := range top {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, fmt.Errorf("%s: key %q: the value must be the document's text, a string (Relay's and GraphQL Code Generator's manifests map ids to texts)", path, id)
		}
		if id == "" || text == "" {
			return nil, fmt.Errorf("%s: key %q: an empty id or text", path, id)
		}
		docs = append(docs, &Document{ID: id, Text: text, File: path})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents", path)
	}
	return docs, nil
}

func readApollo(path string, b []byte) ([]*Document, error) {
	var m struct {
		Format     string `json:"format"`
		Version    int    `json:"version"`
		Operations []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Type string `json:"type"`
			Body string `json:"body"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not an Apollo persisted-query manifest: %s", path, jsonError(b, err))
	}
	if m.Format != apolloFormat || m.Version != 1 {
		return nil, fmt.Errorf("%s: format %q version %d: only %q version 1 is read", path, m.Format, m.Version, apolloFormat)
	}
	docs := make([]*Document, 0, len(m.Operations))
	for i, op := range m.Operations {
		if op.ID == "" || op.Body == "" {
			return nil, fmt.Errorf("%s: operations[%d]: an operation needs an id and a body", path, i)
		}
		docs = append(docs, &Document{ID: op.ID, Name: op.Name, Text: op.Body, File: path})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no operations", path)
	}
	return docs, nil
}

// jsonError says where in b, by line and column, decoding it failed.
func jsonError(b []byte, err error) string {
	var offset int64 = -1
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
		if typ.Field != "" {
			return fmt.Sprintf("%s must be %s (line %d)", typ.Field, typ.Type, line(b, offset))
		}
		return fmt.Sprintf("the manifest must be a JSON object (line %d)", line(b, offset))
	}
	if offset < 0 {
		return err.Error()
	}
	before := b[:min(int(offset), len(b))]
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d: %v", line(b, offset), col, err)
}

func line(b []byte, offset int64) int {
	return bytes.Count(b[:min(int(offset), len(b))], []byte("\n")) + 1
}

// Documents is the set in force, read at each request, and where it was
// loaded from, to load again: Reload swaps a whole new set in, so that a
// request sees the old set or the new one, never a mixture, and none
// waits.
type Documents struct {
	schema *ast.Schema
	paths  []string
	set    atomic.Pointer[Set]
}

// Open loads the manifests at paths (see Load).
func Open(schema *ast.Schema, paths []string) (*Documents, error) {
	d := &Documents{schema: schema, paths: paths}
	set, err := Load(schema, paths)
	if err != nil {
		return nil, err
	}
	d.set.Store(set)
	return d, nil
}

// Current is the set in force.
func (d *Documents) Current() *Set { return d.set.Load() }

// Reload reads the manifests again and, if they all load, puts the new
// set in force; otherwise the set in force stays, and the error says why.
func (d *Documents) Reload() (*Set, error) {
	set, err := Load(d.schema, d.paths)
	if err != nil {
		return nil, err
	}
	d.set.Store(set)
	return set, nil
}
