package api

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// complexityLimit refuses operations that cost more than Max. It prices
// fields as gqlgen's complexity.Calculate does, with the schema's functions
// (resolvers.Complexity) and 1 plus what its selections cost for any other
// field, with two differences: introspection fields count (gqlgen's skips
// __schema, which made a thousand aliased __schema free), and a fragment is
// priced once however often it is spread (gqlgen's walks it at every
// spread, exponential in fragments that spread one another).
type complexityLimit struct {
	Max int
	es  graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = &complexityLimit{}

func (*complexityLimit) ExtensionName() string { return "ComplexityLimit" }

func (c *complexityLimit) Validate(es graphql.ExecutableSchema) error {
	if es == nil {
		return errors.New("complexityLimit needs the schema")
	}
	c.es = es
	return nil
}

func (c *complexityLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	p := pricer{ctx: ctx, es: c.es, schema: c.es.Schema(), vars: oc.Variables, fragments: map[string]int{}}
	if cost := p.selections(oc.Operation.SelectionSet); cost > c.Max {
		return limitError(CodeComplexityLimit, "operation has complexity %d, which exceeds the limit of %d", cost, c.Max)
	}
	return nil
}

// pricer prices one operation of a validated document.
type pricer struct {
	ctx       context.Context
	es        graphql.ExecutableSchema
	schema    *ast.Schema
	vars      map[string]any
	fragments map[string]int // each fragment's price, once known
}

func (p *pricer) selections(set ast.SelectionSet) int {
	cost := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			cost = satAdd(cost, p.field(s))
		case *ast.InlineFragment:
			cost = satAdd(cost, p.selections(s.SelectionSet))
		case *ast.FragmentSpread:
			price, ok := p.fragments[s.Name]
			if !ok {
				p.fragments[s.Name] = 0 // validation refused cycles; this ends one anyway
				price = p.selections(s.Definition.SelectionSet)
				p.fragments[s.Name] = price
			}
			cost = satAdd(cost, price)
		}
	}
	return cost
}

// field prices one field: the schema's complexity function for it, if it
// has one, else 1 plus its selections. On an interface, the dearest of the
// types that implement it.
func (p *pricer) field(f *ast.Field) int {
	kind := p.schema.Types[f.Definition.Type.Name()].Kind
	child := 0
	switch kind {
	case ast.Object, ast.Interface, ast.Union:
		child = p.selections(f.SelectionSet)
	}
	args := f.ArgumentMap(p.vars)
	if f.ObjectDefinition.Kind != ast.Interface {
		return p.price(f.ObjectDefinition, f.Name, child, args)
	}
	dearest := 0
	for _, t := range p.schema.GetPossibleTypes(f.ObjectDefinition) {
		dearest = max(dearest, p.price(t, f.Name, child, args))
	}
	return dearest
}

func (p *pricer) price(on *ast.Definition, field string, child int, args map[string]any) int {
	if c, ok := p.es.Complexity(p.ctx, on.Name, field, child, args); ok && c >= 1 {
		return c
	}
	return satAdd(1, child)
}
