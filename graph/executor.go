package graph

// The generated code calls the functions here where gqlgen's templates
// call graphql's own (graph/internal/gqlgen rewrites the calls): they do
// what those do, without the goroutines and allocations that this
// server's queries do not need.

import (
	"context"
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// fieldName names a field of a type of the schema.
type fieldName struct{ object, field string }

// marshalList marshals a list of objects, for
// graphql.MarshalSliceConcurrently. gqlgen marshals each element on a goroutine of its
// own, so that the resolvers under different elements wait on their
// loaders together and each loader's batch holds the whole list. But an
// element whose selection reaches no field that gqlgen resolves
// concurrently (see concurrent) never waits on anything: such a list, the
// names of a page of followers for instance, is marshaled here in order,
// each element as gqlgen marshals a list of one, without a goroutine, and
// the stack growth that a new goroutine's first object costs, per element.
func (ec *executionContext) marshalList(ctx context.Context, sel ast.SelectionSet, n int, workerLimit int64, omitPanicHandler bool,
	marshal func(ctx context.Context, i int) graphql.Marshaler,
) graphql.Array {
	if n <= 1 || mayWait(sel) {
		return graphql.MarshalSliceConcurrently(ctx, n, workerLimit, omitPanicHandler, marshal)
	}
	out := make(graphql.Array, n)
	// The elements' field contexts and indexes, allocated together.
	fcs, index := make([]graphql.FieldContext, n), make([]int, n)
	for i := range out {
		index[i] = i
		fcs[i].Index = &index[i]
		out[i] = marshalElement(ctx, &fcs[i], omitPanicHandler, marshal)
	}
	return out
}

// marshalElement is what graphql.MarshalSliceConcurrently does with the
// element of a list of one: a field context with the element's index
// (fc), and a panic reported at its path as a null element.
func marshalElement(ctx context.Context, fc *graphql.FieldContext, omitPanicHandler bool, marshal func(ctx context.Context, i int) graphql.Marshaler) (m graphql.Marshaler) {
	ctx = graphql.WithFieldContext(ctx, fc)
	if !omitPanicHandler {
		defer func() {
			if r := recover(); r != nil {
				graphql.AddError(ctx, graphql.Recover(ctx, r))
				m = graphql.Null
			}
		}()
	}
	return marshal(ctx, *fc.Index)
}

// mayWait tells whether a selection reaches a field that gqlgen resolves
// concurrently, through its subselections and fragments. A field whose
// parent type validation did not record counts as one.
func mayWait(sel ast.SelectionSet) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.ObjectDefinition == nil || concurrent[fieldName{s.ObjectDefinition.Name, s.Name}] || mayWait(s.SelectionSet) {
				return true
			}
		case *ast.InlineFragment:
			if mayWait(s.SelectionSet) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || mayWait(s.Definition.SelectionSet) {
				return true
			}
		}
	}
	return false
}

// deferredGroup is the group of an object's fields that @defer sends
// later, for graphql.NewDeferredGroup. The schema leaves @defer out (see
// unserved), so no field is deferred and the group stays empty, as
// NewDeferredGroup's would, without the path, field set and map that it
// allocates for every object; a deferred field gets gqlgen's group still.
func deferredGroup(ctx context.Context, fields []graphql.CollectedField) graphql.DeferredGroup {
	for _, f := range fields {
		if f.IsDeferred() {
			return graphql.NewDeferredGroup(ctx)
		}
	}
	return graphql.DeferredGroup{Context: ctx}
}

// fieldSet is an object's fields and their values, graphql's FieldSet,
// with a MarshalGQL that writes them without what graphql's allocates for
// every object it writes: a map of the names written, an iterator and a
// pointer to each field (one in seven of the fan-out query's allocations).
type fieldSet struct {
	*graphql.FieldSet
	fields []graphql.CollectedField
}

func newFieldSet(fields []graphql.CollectedField) fieldSet {
	return fieldSet{graphql.NewFieldSet(fields), fields}
}

// MarshalGQL writes the object as graphql.FieldSet does: each response
// name once, the first field's value for it. Response names are GraphQL
// names ([_A-Za-z][_0-9A-Za-z]*), which JSON needs no escapes for.
func (fs fieldSet) MarshalGQL(w io.Writer) {
	io.WriteString(w, "{")
	for i := range fs.fields {
		alias := fs.fields[i].Alias
		if written(fs.fields[:i], alias) {
			continue
		}
		if i > 0 { // the first field is always written
			io.WriteString(w, `,"`)
		} else {
			io.WriteString(w, `"`)
		}
		io.WriteString(w, alias)
		io.WriteString(w, `":`)
		fs.Values[i].MarshalGQL(w)
	}
	io.WriteString(w, "}")
}

// written tells whether one of fields has the response name alias.
func written(fields []graphql.CollectedField, alias string) bool {
	for i := range fields {
		if fields[i].Alias == alias {
			return true
		}
	}
	return false
}
