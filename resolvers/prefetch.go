package resolvers

import (
	"context"
	"encoding/json"

	"follows/auth"
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
	steps := r.prefetchPlan(ctx, fc.Field, paths)
	if len(steps) == 0 {
		return
	}
	l := r.loadersFor(ctx)
	viewer, viewerErr := auth.Viewer(ctx)
	for _, st := range steps {
		for _, id := range ids {
			if st.list != nil {
				q := st.page
				q.User = id
				st.list.start(ctx, l, q)
				continue
			}
			if viewerErr != nil {
				continue
			}
			switch st.field {
			case "viewerFollows":
				l.follows.LoadThunk(ctx, db.Pair{Follower: viewer, Followee: id})
			case "followsViewer":
				l.follows.LoadThunk(ctx, db.Pair{Follower: id, Followee: viewer})
			case "viewerBlocks":
				l.blocks.LoadThunk(ctx, db.Pair{Follower: viewer, Followee: id})
			case "blocksViewer":
				l.blocks.LoadThunk(ctx, db.Pair{Follower: id, Followee: viewer})
			}
		}
	}
}

// prefetchStep is one lookup to start for every user of a list: a list
// field of User and the page its arguments ask for, or a field that looks
// up the viewer and the user together.
type prefetchStep struct {
	list  *listField
	page  db.PageQuery
	field string
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
	oc := graphql.GetOperationContext(ctx)
	var steps []prefetchStep
	func() {
		// A malformed argument is for the field's own resolver to report.
		defer func() { recover() }()
		for _, path := range paths {
			for _, sel := range selectionsAt(oc, field.Selections, path) {
				for _, f := range graphql.CollectFields(oc, sel, []string{"User"}) {
					if st, ok := planField(ctx, oc, f); ok {
						steps = append(steps, st)
					}
				}
			}
		}
	}()
	if cached {
		rl.plans.Store(field.Field, steps)
	}
	return steps
}

func planField(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField) (prefetchStep, bool) {
	switch f.Name {
	case "viewerFollows", "followsViewer", "viewerBlocks", "blocksViewer":
		return prefetchStep{field: f.Name}, true
	}
	list := rowOf("User", f.Name)
	if list == nil || list.start == nil {
		return prefetchStep{}, false
	}
	args := f.ArgumentMap(oc.Variables)
	q, err := list.args(ctx, 0, intArg(args["first"]), strArg(args["after"]))
	return prefetchStep{list: list, page: q}, err == nil
}

// selectionsAt follows field names down a selection set, through every
// alias of each name.
func selectionsAt(oc *graphql.OperationContext, sel ast.SelectionSet, path []string) []ast.SelectionSet {
	if len(path) == 0 {
		return []ast.SelectionSet{sel}
	}
	var out []ast.SelectionSet
	for _, f := range graphql.CollectFields(oc, sel, nil) {
		if f.Name == path[0] {
			out = append(out, selectionsAt(oc, f.Selections, path[1:])...)
		}
	}
	return out
}

func intArg(v any) *int {
	var n int
	switch v := v.(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	case float64:
		n = int(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return nil
		}
		n = int(i)
	default:
		return nil
	}
	return &n
}

func strArg(v any) *string {
	if s, ok := v.(string); ok {
		return &s
	}
	return nil
}
