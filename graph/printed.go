package graph

import (
	"bytes"
	"maps"

	"github.com/vektah/gqlparser/v2/formatter"
)

// The printed schema at the root is for client tools and readers. go
// generate handles packages in import-path order, so this runs after
// gqlgen's step in the root package has regenerated generated.go.
//go:generate go run ./internal/printschema ../schema.graphql

// specifiedDirectives are the directives of the GraphQL spec, which every
// tool knows, so a printed schema leaves them out (as graphql-js's
// printSchema does) unless the schema redeclares one.
var specifiedDirectives = map[string]bool{"skip": true, "include": true, "deprecated": true, "specifiedBy": true, "oneOf": true}

// PrintedSchema is the server's schema (Schema) as SDL, as /schema.graphql
// holds it: the types and directives the schema declares, and any
// directive the server adds that is not in the spec, which introspection
// would report and a tool reading the file would otherwise not know (none
// now that @defer is left out). Built-in types and the spec's directives
// are left out.
func PrintedSchema() string {
	s := *Schema()
	s.Directives = maps.Clone(s.Directives)
	for name, d := range s.Directives {
		if builtIn := d.Position != nil && d.Position.Src != nil && d.Position.Src.BuiltIn; builtIn && !specifiedDirectives[name] {
			// The formatter leaves out what comes from the prelude; this
			// one it is to print.
			printed, pos, src := *d, *d.Position, *d.Position.Src
			src.BuiltIn = false
			pos.Src = &src
			printed.Position = &pos
			s.Directives[name] = &printed
		}
	}
	var b bytes.Buffer
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatSchema(&s)
	return b.String()
}
