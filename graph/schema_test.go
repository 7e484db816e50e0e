package graph_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/graph"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// schemaFile is the printed schema at the repository's root.
const schemaFile = "../schema.graphql"

// schema.graphql at the root is the printed schema, for client tools and
// readers. It fails when it drifts from the server's schema or from what
// the running server's introspection returns, directives included;
// `go generate ./...` rewrites it.
func TestSchemaFile(t *testing.T) {
	printed := graph.PrintedSchema()
	file, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != printed {
		t.Fatal("schema.graphql differs from the server's schema: run go generate ./...")
	}

	parsed, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: string(file)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	s := apitest.Start(t)
	var out struct {
		Schema struct {
			Directives []struct {
				Name      string
				Locations []string
				Args      []struct{ Name string }
			}
			Types []struct {
				Name   string
				Kind   string
				Fields []struct {
					Name string
					Args []struct {
						Name string
						Type typeRef
					}
					Type typeRef
				}
				InputFields []struct {
					Name string
					Type typeRef
				}
			}
		} `json:"__schema"`
	}
	s.Data("", `{ __schema { directives { name locations args { name } } types { name kind
	  fields { name args { name type { ...T } } type { ...T } }
	  inputFields { name type { ...T } } } } }
	  fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`, nil, &out)

	var fromServer, fromFile []string
	for _, ty := range out.Schema.Types {
		if strings.HasPrefix(ty.Name, "__") {
			continue
		}
		fromServer = append(fromServer, "type "+ty.Name)
		for _, f := range ty.Fields {
			var args []string
			for _, a := range f.Args {
				args = append(args, a.Name+": "+a.Type.String())
			}
			fromServer = append(fromServer, fmt.Sprintf("%s.%s(%s): %s", ty.Name, f.Name, strings.Join(args, ", "), f.Type))
		}
		for _, f := range ty.InputFields {
			fromServer = append(fromServer, fmt.Sprintf("%s.%s(): %s", ty.Name, f.Name, f.Type))
		}
	}
	for name, def := range parsed.Types {
		if strings.HasPrefix(name, "__") {
			continue
		}
		fromFile = append(fromFile, "type "+name)
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			var args []string
			for _, a := range f.Arguments {
				args = append(args, a.Name+": "+a.Type.String())
			}
			fromFile = append(fromFile, fmt.Sprintf("%s.%s(%s): %s", name, f.Name, strings.Join(args, ", "), f.Type))
		}
	}
	// Directives: every one the server reports is declared in the file,
	// but for the spec's own, which every tool knows; and the file
	// declares none the server lacks.
	declared, perr := parser.ParseSchema(&ast.Source{Name: "schema.graphql", Input: string(file)})
	if perr != nil {
		t.Fatal(perr)
	}
	spec := map[string]bool{"skip": true, "include": true, "deprecated": true, "specifiedBy": true, "oneOf": true}
	for _, d := range out.Schema.Directives {
		if spec[d.Name] && declared.Directives.ForName(d.Name) == nil {
			continue
		}
		var args []string
		for _, a := range d.Args {
			args = append(args, a.Name)
		}
		slices.Sort(d.Locations)
		fromServer = append(fromServer, fmt.Sprintf("@%s(%s) on %s", d.Name, strings.Join(args, ", "), strings.Join(d.Locations, "|")))
	}
	for _, d := range declared.Directives {
		var args, locs []string
		for _, a := range d.Arguments {
			args = append(args, a.Name)
		}
		for _, l := range d.Locations {
			locs = append(locs, string(l))
		}
		slices.Sort(locs)
		fromFile = append(fromFile, fmt.Sprintf("@%s(%s) on %s", d.Name, strings.Join(args, ", "), strings.Join(locs, "|")))
	}
	slices.Sort(fromServer)
	slices.Sort(fromFile)
	if !slices.Equal(fromServer, fromFile) {
		a, _ := json.MarshalIndent(fromServer, "", " ")
		b, _ := json.MarshalIndent(fromFile, "", " ")
		t.Errorf("introspection and schema.graphql differ:\nserver %s\nfile %s", a, b)
	}
}

// typeRef is an introspected type reference, printed as in SDL.
type typeRef struct {
	Kind   string
	Name   string
	OfType *typeRef
}

func (r typeRef) String() string {
	switch r.Kind {
	case "NON_NULL":
		return r.OfType.String() + "!"
	case "LIST":
		return "[" + r.OfType.String() + "]"
	}
	return r.Name
}
