package graph

import (
	"maps"
	"sync"

	"github.com/vektah/gqlparser/v2/ast"
)

// unserved are the directives that gqlparser's prelude declares and that
// this server does not serve. gqlgen defers a fragment only through its
// multipart/mixed transport, which the server does not use: through POST
// and GET a deferred fragment's fields came back null with "hasNext":
// true, and nothing followed. Left out of the schema, @defer is neither
// advertised by introspection nor printed in schema.graphql, and a
// document that uses it fails validation (GRAPHQL_VALIDATION_FAILED)
// instead of losing data.
var unserved = []string{"defer"}

// Schema is the schema the server serves: the one in schema.graphqls with
// gqlparser's prelude, less the unserved directives. Give it to
// NewExecutableSchema in Config.Schema.
var Schema = sync.OnceValue(func() *ast.Schema {
	s := *NewExecutableSchema(Config{}).Schema()
	s.Directives = maps.Clone(s.Directives)
	for _, name := range unserved {
		delete(s.Directives, name)
	}
	return &s
})
