package graph_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"follows/api/apitest"
	"follows/graph"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
)

var update = flag.Bool("update", false, "rewrite schema.graphql from the server's schema")

// printedSchema is the server's schema as SDL, built-in types left out.
func printedSchema() string {
	var b bytes.Buffer
	formatter.NewFormatter(&b, formatter.WithIndent("  ")).FormatSchema(graph.NewExecutableSchema(graph.Config{}).Schema())
	return b.String()
}

// schemaFile is the printed schema at the repository's root.
const schemaFile = "../schema.graphql"

// schema.graphql at the root is the printed schema, for client tools and
// readers. It fails when it drifts from the server's schema or from what
// the running server's introspection returns; `go test ./graph -run
// TestSchemaFile -update` rewrites it.
func TestSchemaFile(t *testing.T) {
	printed := printedSchema()
	if *update {
		if err := os.WriteFile(schemaFile, []byte(printed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != printed {
		t.Fatal("schema.graphql differs from the server's schema: run go test ./graph -run TestSchemaFile -update")
	}

	parsed, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: string(file)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	s := apitest.Start(t)
	var out struct {
		Schema struct {
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
	s.Data("", `{ __schema { types { name kind
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
