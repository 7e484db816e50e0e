package resolvers

import (
	"context"
	"errors"
	"slices"

	"follows/auth"
	"follows/db"
	"follows/graph/model"

	"github.com/99designs/gqlgen/graphql"
)

// maxNodes bounds the ids of one nodes field, as maxFirst bounds a page.
const maxNodes = 100

// node answers Query.node. Relay refetches through it with ids it was
// handed, so an id that names no one visible, or is not an id this server
// hands out, answers null rather than failing the query.
func (r *Resolver) node(ctx context.Context, id string) (model.Node, error) {
	uid, ok := model.ParseUserID(id)
	if !ok {
		return nil, nil
	}
	u, err := r.userByID(ctx, uid)
	if u == nil || err != nil {
		return nil, err
	}
	return u, nil
}

// nodes answers Query.nodes: node for each id, in one statement.
func (r *Resolver) nodes(ctx context.Context, ids []string) ([]model.Node, error) {
	if len(ids) > maxNodes {
		return nil, badArg(ctx, "ids", "at most %d ids, not %d", maxNodes, len(ids))
	}
	r.prefetchRoots(ctx)
	// Each id that can be a user's, and where in ids it stands.
	var uids []int64
	var at []int
	for i, id := range ids {
		if uid, ok := model.ParseUserID(id); ok {
			uids = append(uids, uid)
			at = append(at, i)
		}
	}
	found, err := r.loadersFor(ctx).users.LoadAll(ctx, uids)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	out := make([]model.Node, len(ids))
	for j, u := range found {
		v, err := r.visible(ctx, u)
		if err != nil {
			return nil, err
		}
		if v != nil {
			out[at[j]] = v
		}
	}
	return out, nil
}

// nodesPrice is what nodes costs: 1, plus what each object asks for
// times the ids, at most maxNodes (more are refused, naming ids).
func nodesPrice(child int, ids []string) int {
	return 1 + min(len(ids), maxNodes)*child
}

// userByID answers the root fields that find a user by id, through the
// request's loader, which prefetchRoots has given every such user at once.
func (r *Resolver) userByID(ctx context.Context, id int64) (*db.User, error) {
	r.prefetchRoots(ctx)
	u, err := r.loadersFor(ctx).users.Load(ctx, id)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	return r.visible(ctx, u)
}

// prefetchRoots looks up, once per request, the users that every root
// field of the operation finds by id (user(id:), node, nodes, and viewer
// by its token's) and gives them to the request's users loader, and
// starts the lookups that those fields' selections make of them (pages,
// viewer relations), as prefetch does for the users of a list. When the
// selections start a list, the users come with the first batch of lists
// (db.Along: in its statement, on PostgreSQL), else in a statement of
// their own. gqlgen resolves root fields side by side, each on its own
// goroutine, and each waits here for the first: fifty aliased user(id:)
// then cost what one does.
func (r *Resolver) prefetchRoots(ctx context.Context) {
	rl, ok := ctx.Value(loadersKey{}).(*requestLoaders)
	if !ok || !graphql.HasOperationContext(ctx) {
		return
	}
	rl.roots.Do(func() { r.startRoots(ctx, rl) })
}

func (r *Resolver) startRoots(ctx context.Context, rl *requestLoaders) {
	oc := graphql.GetOperationContext(ctx)
	fields, err := collectFields(oc, oc.Operation.SelectionSet, []string{"Query"})
	if err != nil {
		return // gqlgen reports the selection when it executes it
	}
	type root struct {
		field graphql.CollectedField
		ids   []int64
	}
	var roots []root
	var all []int64 // each once: fifty aliases may hold a hundred ids each
	seen := map[int64]bool{}
	for _, f := range fields {
		ids := rootIDs(ctx, oc, f)
		if len(ids) == 0 {
			continue
		}
		roots = append(roots, root{f, ids})
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				all = append(all, id)
			}
		}
	}
	if len(all) == 0 {
		return
	}
	// The row of the user the token claims comes in the same statement,
	// for checking the viewer (see me) when a field asks.
	if claim, err := auth.Viewer(ctx); err == nil && !seen[claim.UserID] {
		all = append(all, claim.UserID)
	}
	plans := make([][]prefetchStep, len(roots))
	lists := false
	for i, rt := range roots {
		plans[i] = r.prefetchPlan(ctx, rt.field, [][]string{{}})
		lists = lists || slices.ContainsFunc(plans[i], func(st prefetchStep) bool { return st.list != nil })
	}
	var a *rootsAlong
	if lists {
		// The users come with the first batch of lists to run (see
		// db.Along), which their own selections start just below.
		a = &rootsAlong{ids: all, done: make(chan struct{})}
		rl.along.Store(a)
	}
	for i, rt := range roots {
		r.startLists(ctx, plans[i], rt.ids)
	}
	var found []*db.User
	if a != nil {
		select {
		case <-a.done:
			found = a.users
		case <-ctx.Done():
		}
	} else {
		var err error
		if found, err = r.Store.UsersByID(ctx, all); err != nil && !errors.Is(err, context.Canceled) {
			r.log().WarnContext(ctx, "root prefetch skipped", "err", err)
		}
	}
	if found == nil {
		return // each field's own lookup reads them, and reports what fails
	}
	l := r.loadersFor(ctx)
	for i, id := range all {
		l.users.Prime(id, found[i])
	}
	// The viewer's follows need the viewer checked, from the rows just
	// primed.
	for i, rt := range roots {
		r.startViewerSteps(ctx, plans[i], rt.ids)
	}
}

// rootIDs are the users a root field finds by id, read from its arguments
// as its resolver reads them; none for any other field, or for arguments
// that its resolver will refuse.
func rootIDs(ctx context.Context, oc *graphql.OperationContext, f graphql.CollectedField) []int64 {
	switch f.Name {
	case "viewer":
		if claim, err := auth.Viewer(ctx); err == nil {
			return []int64{claim.UserID}
		}
	case "user":
		id, err := argument(f, "id", oc.Variables, graphql.UnmarshalID)
		if err != nil || id == nil {
			return nil
		}
		if uid, err := parseID(ctx, "id", *id); err == nil {
			return []int64{uid}
		}
	case "node":
		id, err := argument(f, "id", oc.Variables, graphql.UnmarshalID)
		if err != nil || id == nil {
			return nil
		}
		if uid, ok := model.ParseUserID(*id); ok {
			return []int64{uid}
		}
	case "nodes":
		ids, err := argument(f, "ids", oc.Variables, unmarshalIDs)
		if err != nil || ids == nil || len(*ids) > maxNodes {
			return nil
		}
		var out []int64
		for _, id := range *ids {
			if uid, ok := model.ParseUserID(id); ok {
				out = append(out, uid)
			}
		}
		return out
	}
	return nil
}

// unmarshalIDs reads a list of IDs as gqlgen coerces it, a lone ID
// standing for a list of one.
func unmarshalIDs(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]string, len(list))
	for i, item := range list {
		id, err := graphql.UnmarshalID(item)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}
