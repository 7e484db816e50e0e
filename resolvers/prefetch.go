package resolvers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"follows/db"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// prefetch starts, from the resolver of a list, every lookup that the
// query will make for the users in it (counts, pages, viewer follows...),
// before any of their own resolvers run. Each loader's batch then holds
// the whole list, whatever the timing of the resolvers' goroutines, and a
// list costs a fixed number of statements. The resolvers later find the
// results in their loaders' caches. path leads from the list field's
// selection to the User objects, such as "nodes" or "edges", "node".
func (r *Resolver) prefetch(ctx context.Context, ids []int64, paths ...[]string) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil || len(ids) == 0 {
		return
	}
	r.startSteps(ctx, r.prefetchPlan(ctx, fc.Field, paths), ids)
}

// startSteps starts each step for each of the users.
func (r *Resolver) startSteps(ctx context.Context, steps []prefetchStep, ids []int64) {
	r.startLists(ctx, steps, ids)
	r.startViewerSteps(ctx, steps, ids)
}

// startLists starts the steps that need no viewer: the lists, and the
// blocks, whose loader checks the viewer's token itself.
func (r *Resolver) startLists(ctx context.Context, steps []prefetchStep, ids []int64) {
	l := r.loadersFor(ctx)
	for _, st := range steps {
		for _, id := range ids {
			switch {
			case st.list != nil:
				q := st.page
				q.User = id
				st.list.start(ctx, l, q)
			case st.field == "viewerBlocks" || st.field == "blocksViewer":
				// Both fields, one key.
				l.blocks.LoadThunk(ctx, id)
			}
		}
	}
}

// startViewerSteps starts the viewer's follows, which need the viewer,
// checked (see me): its lookup waits for the users loader's batch, once a
// request, or finds the row that the root prefetch read.
func (r *Resolver) startViewerSteps(ctx context.Context, steps []prefetchStep, ids []int64) {
	if !slices.ContainsFunc(steps, prefetchStep.viewer) {
		return
	}
	viewer, ok, _ := r.viewerID(ctx)
	if !ok {
		return
	}
	l := r.loadersFor(ctx)
	for _, st := range steps {
		for _, id := range ids {
			switch st.field {
			case "viewerFollows":
				l.follows.LoadThunk(ctx, db.Pair{Follower: viewer, Followee: id})
			case "followsViewer":
				l.follows.LoadThunk(ctx, db.Pair{Follower: id, Followee: viewer})
			}
		}
	}
}

// userImplementors are what a User satisfies in a fragment's type
// condition: the type and the interface it implements.
var userImplementors = []string{"User", "Node"}

// prefetchStep is one lookup to start for every user of a list: a list
// field of User and the page its arguments ask for, or a field that looks
// up the viewer and the user together.
type prefetchStep struct {
	list  *listField
	page  db.PageQuery
	field string
}

// viewer reports whether the step looks up the viewer's follows.
func (st prefetchStep) viewer() bool {
	return st.field == "viewerFollows" || st.field == "followsViewer"
}

// prefetchPlan works out, once per request and list field (every parent's
// followers(first: 10) shares one), which lookups the users under the
// field will make.
func (r *Resolver) prefetchPlan(ctx context.Context, field graphql.CollectedField, paths [][]string) []prefetchStep {
	rl, cached := ctx.Value(loadersKey{}).(*requestLoaders)
	if cached {
		if steps, ok := rl.plans.Load(field.Field); ok {
			return steps.([]prefetchStep)
		}
	}
	steps, err := planSteps(ctx, field, paths)
	if err != nil {
		// gqlgen meets the same selection when it executes it, and reports
		// it then; the users' lookups go unbatched meanwhile.
		r.log().WarnContext(ctx, "prefetch skipped", "field", field.Name, "err", err)
	}
	if cached {
		rl.plans.Store(field.Field, steps)
	}
	return steps
}

func planSteps(ctx context.Context, field graphql.CollectedField, paths [][]string) ([]prefetchStep, error) {
	oc := graphql.GetOperationContext(ctx)
	var steps []prefetchStep
	for _, path := range paths {
		sels, err := selectionsAt(oc, field.Selections, path)
		if err != nil {
			return nil, err
		}
		for _, sel := range sels {
			fields, err := collectFields(oc, sel, userImplementors)
			if err != nil {
				return nil, err
			}
			for _, f := range fields {
				if st, ok := planField(ctx, oc, f); ok {
					steps = append(steps, st)
				}
			}
		}
	}
	return steps, nil
}

// planField is the step for one field selected on the users of a list, if
// prefetch knows it. A list whose arguments do not coerce, or are out of
// bounds, is left out: its own resolver, or gqlgen before it, reports them
// and names the argument.
func planField(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField) (prefetchStep, bool) {
	switch f.Name {
	case "viewerFollows", "followsViewer", "viewerBlocks", "blocksViewer":
		return prefetchStep{field: f.Name}, true
	}
	list := rowOf("User", f.Name)
	if list == nil || list.start == nil {
		return prefetchStep{}, false
	}
	var p paging
	var errs [4]error
	p.first, errs[0] = argument(f, "first", oc.Variables, graphql.UnmarshalInt)
	p.last, errs[1] = argument(f, "last", oc.Variables, graphql.UnmarshalInt)
	p.after, errs[2] = argument(f, "after", oc.Variables, graphql.UnmarshalString)
	p.before, errs[3] = argument(f, "before", oc.Variables, graphql.UnmarshalString)
	if errors.Join(errs[:]...) != nil {
		return prefetchStep{}, false
	}
	q, err := list.args(ctx, 0, p)
	if err != nil {
		return prefetchStep{}, false
	}
	q.Brief = list.isBrief(oc, f)
	return prefetchStep{list: list, page: q}, true
}

// argument is the value of an optional argument as gqlgen hands it to the
// field's resolver, nil when absent or null, or why it does not coerce.
// (gqlparser's ArgumentMap would panic instead.)
func argument[T any](f graphql.CollectedField, name string, vars map[string]any, unmarshal func(any) (T, error)) (*T, error) {
	a := f.Arguments.ForName(name)
	if a == nil {
		return nil, nil
	}
	v, err := a.Value.Value(vars)
	if err != nil || v == nil {
		return nil, err
	}
	t, err := unmarshal(v)
	if err != nil {
		return nil, fmt.Errorf("argument %s: %w", name, err)
	}
	return &t, nil
}

// collectFields is graphql.CollectFields with its panics returned. gqlgen
// panics on some selections that validation lets through: an @skip or
// @include whose `if` is a variable declared with a default and sent as
// null. Only these are recovered; a panic in this package's own code
// reaches gqlgen's recover function, which logs it with its stack.
func collectFields(oc *graphql.OperationContext, sel ast.SelectionSet, satisfies []string) (fields []graphql.CollectedField, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("collect fields: %v", p)
		}
	}()
	return graphql.CollectFields(oc, sel, satisfies), nil
}

// selectionsAt follows field names down a selection set, through every
// alias of each name.
func selectionsAt(oc *graphql.OperationContext, sel ast.SelectionSet, path []string) ([]ast.SelectionSet, error) {
	if len(path) == 0 {
		return []ast.SelectionSet{sel}, nil
	}
	fields, err := collectFields(oc, sel, nil)
	if err != nil {
		return nil, err
	}
	var out []ast.SelectionSet
	for _, f := range fields {
		if f.Name == path[0] {
			more, err := selectionsAt(oc, f.Selections, path[1:])
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}
