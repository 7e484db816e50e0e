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
	oc := graphql.GetOperationContext(ctx)
	// A malformed argument is for the field's own resolver to report.
	defer func() { recover() }()
	for _, path := range paths {
		for _, sel := range selectionsAt(oc, fc.Field.Selections, path) {
			for _, f := range graphql.CollectFields(oc, sel, []string{"User"}) {
				r.prefetchField(ctx, oc, f, ids)
			}
		}
	}
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

func (r *Resolver) prefetchField(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField, ids []int64) {
	l := r.loadersFor(ctx)
	args := f.ArgumentMap(oc.Variables)
	page := func(list string, def int) (db.PageQuery, bool) {
		first, after := intArg(args["first"]), strArg(args["after"])
		q, err := pageArgs(ctx, list, 0, first, after, def)
		return q, err == nil
	}
	viewer, viewerErr := auth.Viewer(ctx)
	for _, id := range ids {
		switch f.Name {
		case "followers", "following":
			loader, list := l.followers, listFollowers
			if f.Name == "following" {
				loader, list = l.following, listFollowing
			}
			if q, ok := page(list, 20); ok {
				q.User = id
				loader.LoadThunk(ctx, q)
			}
		case "mutualFollows":
			if q, ok := page(listMutual, 20); ok {
				q.User = id
				l.mutual.LoadThunk(ctx, q)
			}
		case "suggestions":
			if q, ok := page("suggestions", 10); ok {
				l.suggestions.LoadThunk(ctx, db.SuggestionQuery{User: id, First: q.First})
			}
		case "viewerFollows":
			if viewerErr == nil {
				l.follows.LoadThunk(ctx, db.Pair{Follower: viewer, Followee: id})
			}
		case "followsViewer":
			if viewerErr == nil {
				l.follows.LoadThunk(ctx, db.Pair{Follower: id, Followee: viewer})
			}
		}
	}
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
