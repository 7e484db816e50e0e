// Command gqlgen is gqlgen's generate (go generate runs it, see server.go)
// with steps of this project's own: the generated code calls graph's
// marshalList, deferredGroup and newFieldSet where gqlgen's templates call
// graphql.MarshalSliceConcurrently, graphql.NewDeferredGroup and
// graphql.NewFieldSet (see graph/executor.go), so that a list whose
// elements can never wait on a loader is marshaled on the goroutine that
// asks for it, an object with no deferred field allocates no group for
// them, and objects are written without a map each. For marshalList it
// writes, from what gqlgen decides, which fields gqlgen resolves
// concurrently. And a field that only reads a scalar off its object (no
// resolver, no arguments, no directive: a user's name, a follow's time)
// is marshaled straight from the object, without the field context,
// context value, closures and boxed value that graphql.ResolveField
// makes for it: see plainFields.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/vektah/gqlparser/v2/ast"
)

func main() {
	if err := generate(); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(1)
	}
}

func generate() error {
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		return err
	}
	plain := &plainFields{}
	if err := api.Generate(cfg, api.AddPlugin(concurrentFields{}), api.AddPlugin(plain)); err != nil {
		return err
	}
	return rewrite(cfg.Exec.Filename, plain.funcs)
}

// calls are the calls that gqlgen's templates write, and what replaces
// them: for every list of objects, where sel is the selection of the
// list's elements, marshalList, which takes MarshalSliceConcurrently's
// arguments and the selection besides; for every object, whose collected
// fields are fields, deferredGroup and newFieldSet.
var calls = []struct{ gqlgen, graph string }{
	{"graphql.MarshalSliceConcurrently(ctx, len(v), ", "ec.marshalList(ctx, sel, len(v), "},
	{"deferred := graphql.NewDeferredGroup(ctx)\n", "deferred := deferredGroup(ctx, fields)\n"},
	{"out := graphql.NewFieldSet(fields)\n", "out := newFieldSet(fields)\n"},
}

// rewrite makes the generated code call graph's functions, and marshal
// the plain fields, whose functions are named in plain, straight from
// their objects.
func rewrite(path string, plain []string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, c := range calls {
		if !bytes.Contains(src, []byte(c.gqlgen)) {
			return fmt.Errorf("%s has no %q: gqlgen's templates changed, see graph/executor.go", path, c.gqlgen)
		}
		src = bytes.ReplaceAll(src, []byte(c.gqlgen), []byte(c.graph))
	}
	for _, name := range plain {
		re := regexp.MustCompile(strings.ReplaceAll(plainField, "NAME", regexp.QuoteMeta(name)))
		if !re.Match(src) {
			return fmt.Errorf("%s: %s is not written as plainField expects: gqlgen's templates changed", path, name)
		}
		src = re.ReplaceAll(src, []byte("$1\n\treturn $3(ctx, field.Selections, $2)\n}"))
	}
	return os.WriteFile(path, src, 0o644)
}

// plainField is how gqlgen writes the function of a plain field NAME
// (see plainFields): a field context, the object's field or method read
// as the resolver, no middleware, and the scalar's marshaler. The
// rewrite keeps the function's first line, and calls the marshaler on
// the value read ($3 of $2). What it leaves out does nothing for such a
// field: reading a field, or calling a method that takes no context and
// returns no error, of an object that is there cannot fail (a panic in
// such a method would be reported at the object's path rather than the
// field's), the scalars' marshalers never answer null, and the server
// installs no field middleware (gqlgen's AroundFields; see api's use),
// which is all that would see the field context.
const plainField = `(func \(ec \*executionContext\) NAME\(ctx context\.Context, field graphql\.CollectedField, obj [^)]+\) \(ret graphql\.Marshaler\) \{)
	return graphql\.ResolveField\(
		ctx,
		ec\.OperationContext,
		field,
		func\(ctx context\.Context, field graphql\.CollectedField\) \(\*graphql\.FieldContext, error\) \{
			return ec\.fieldContext_\w+\(ctx, field\)
		\},
		func\(ctx context\.Context\) \(any, error\) \{
			return (obj\.\w+(?:\(\))?), nil
		\},
		nil,
		func\(ctx context\.Context, selections ast\.SelectionSet, v [^)]+\) graphql\.Marshaler \{
			return (ec\.marshalN\S+?)\(ctx, selections, v\)
		\},
		true,
		true,
	\)
\}`

// plainFields is a gqlgen plugin that lists the functions of the plain
// fields: those of an object (not the root types, nor introspection's)
// that gqlgen answers in line, without a resolver or a method taking a
// context, with no arguments and no directives, whose type is a non-null
// scalar or enum.
type plainFields struct{ funcs []string }

func (*plainFields) Name() string { return "plainfields" }

func (p *plainFields) GenerateCode(data *codegen.Data) error {
	for _, o := range data.Objects {
		if o.Root || strings.HasPrefix(o.Name, "__") {
			continue
		}
		for _, f := range o.Fields {
			t := f.TypeReference
			if f.IsConcurrent() || f.IsResolver || len(f.Args) > 0 || len(f.Directives) > 0 ||
				t == nil || t.GQL == nil || !t.GQL.NonNull || t.GQL.Elem != nil ||
				(t.Definition.Kind != ast.Scalar && t.Definition.Kind != ast.Enum) || strings.HasPrefix(f.Name, "__") {
				continue
			}
			p.funcs = append(p.funcs, "_"+o.Name+"_"+f.Name)
		}
	}
	return nil
}

// concurrentFields is a gqlgen plugin that writes concurrent_gen.go beside
// the generated code: the fields (Type.field) that gqlgen resolves on
// goroutines of their own, because a resolver or a method with a context
// answers them, and so may wait on a loader. An interface's field is one
// when any implementation's is.
type concurrentFields struct{}

func (concurrentFields) Name() string { return "concurrentfields" }

func (concurrentFields) GenerateCode(data *codegen.Data) error {
	var keys []string
	for _, o := range data.Objects {
		for _, f := range o.Fields {
			if f.IsConcurrent() {
				keys = append(keys, fmt.Sprintf("{%q, %q}", o.Name, f.Name))
			}
		}
	}
	for name, iface := range data.Interfaces {
		for _, field := range iface.Fields {
			for _, impl := range iface.Implementors {
				o := data.Objects.ByName(impl.Name)
				if o == nil {
					continue
				}
				if i := slices.IndexFunc(o.Fields, func(f *codegen.Field) bool { return f.Name == field.Name }); i >= 0 && o.Fields[i].IsConcurrent() {
					keys = append(keys, fmt.Sprintf("{%q, %q}", name, field.Name))
					break
				}
			}
		}
	}
	slices.Sort(keys)
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by graph/internal/gqlgen, DO NOT EDIT.\n\npackage %s\n\n", data.Config.Exec.Package)
	b.WriteString("// concurrent are the fields that gqlgen resolves on goroutines of their\n// own: see marshalList.\nvar concurrent = map[fieldName]bool{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%s: true,\n", k)
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(filepath.Dir(data.Config.Exec.Filename), "concurrent_gen.go"), src, 0o644)
}
