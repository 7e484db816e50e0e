package resolvers

import (
	"context"
	"errors"

	"follows/auth"
	"follows/db"
	"follows/graph/model"
)

// wrote empties the request's loaders of what it read before a mutation
// wrote, and primes them with the users as the write left them.
func (r *Resolver) wrote(ctx context.Context, users ...*db.User) {
	freshLoaders(ctx)
	l := r.loadersFor(ctx)
	for _, u := range users {
		l.users.Prime(u.ID, u)
	}
}

// viewerPair is the pair of the viewer and a user, the viewer first when
// viewerFirst; ok is false when there is no viewer.
func (r *Resolver) viewerPair(ctx context.Context, user int64, viewerFirst bool) (p db.Pair, ok bool, err error) {
	me, ok, err := r.viewerID(ctx)
	if !ok || err != nil {
		return db.Pair{}, false, err
	}
	if viewerFirst {
		return db.Pair{Follower: me, Followee: user}, true, nil
	}
	return db.Pair{Follower: user, Followee: me}, true, nil
}

// follows tells whether the viewer follows the user (viewerFirst) or the
// user the viewer; false when there is no viewer.
func (r *Resolver) follows(ctx context.Context, user int64, viewerFirst bool) (bool, error) {
	p, ok, err := r.viewerPair(ctx, user, viewerFirst)
	if !ok || err != nil {
		return false, err
	}
	st, err := r.loadersFor(ctx).follows.Load(ctx, p)
	if err != nil {
		return false, storeError(ctx, err)
	}
	return st.Exists, nil
}

// blocks tells whether the viewer blocks the user (viewerFirst) or the
// user the viewer; false when there is no viewer or its token no longer
// holds. Both come from one key of the blocks loader, which checks the
// token itself (see viewerBlocks).
func (r *Resolver) blocks(ctx context.Context, user int64, viewerFirst bool) (bool, error) {
	if _, why := auth.Viewer(ctx); why != nil {
		if errors.Is(why, auth.ErrAccountLookup) {
			return false, storeError(ctx, why)
		}
		return false, nil
	}
	rel, err := r.loadersFor(ctx).blocks.Load(ctx, user)
	if err != nil {
		return false, storeError(ctx, err)
	}
	if viewerFirst {
		return rel.ViewerBlocks, nil
	}
	return rel.BlocksViewer, nil
}

// followSettings returns the settings of an edge's follow when the viewer
// is its follower, and nil otherwise: mutes are private.
func (r *Resolver) followSettings(ctx context.Context, e *model.FollowEdge) (*db.FollowState, error) {
	me, ok, err := r.viewerID(ctx)
	if !ok || err != nil || me != e.FollowerID {
		return nil, err
	}
	st, err := r.loadersFor(ctx).follows.Load(ctx, db.Pair{Follower: e.FollowerID, Followee: e.FolloweeID})
	if err != nil {
		return nil, storeError(ctx, err)
	}
	return &st, nil
}

// followPage answers followers and following: dir says which end of each
// follow the list's users are.
func (r *Resolver) followPage(ctx context.Context, list *listRow[db.Page], dir db.Direction, user *db.User, p paging) (*model.FollowConnection, error) {
	q, page, err := r.page(ctx, list, user.ID, p)
	if err != nil {
		return nil, err
	}
	conn := &model.FollowConnection{
		PageInfo: pageInfo(list.cursor, q, page),
		Total: func(context.Context) (int, error) {
			if dir == db.Following {
				return user.FollowingCount, nil
			}
			return user.FollowerCount, nil
		},
	}
	// The edges are one allocation, their users the page's own.
	edges := make([]model.FollowEdge, len(page.Edges))
	conn.Edges = make([]*model.FollowEdge, len(page.Edges))
	for i := range page.Edges {
		e := &page.Edges[i]
		edges[i] = model.FollowEdge{List: list.cursor, Node: &e.User, FollowedAt: e.At,
			FollowerID: e.User.ID, FolloweeID: user.ID}
		if dir == db.Following {
			edges[i].FollowerID, edges[i].FolloweeID = user.ID, e.User.ID
		}
		conn.Edges[i] = &edges[i]
	}
	return conn, nil
}

// userPage answers a list of users as a UserConnection; total counts the
// whole list when a client asks for totalCount.
func (r *Resolver) userPage(ctx context.Context, list *listRow[db.Page], user int64, p paging, total func(context.Context) (int, error)) (*model.UserConnection, error) {
	q, page, err := r.page(ctx, list, user, p)
	if err != nil {
		return nil, err
	}
	conn := &model.UserConnection{PageInfo: pageInfo(list.cursor, q, page), Total: total}
	edges := make([]model.UserEdge, len(page.Edges))
	conn.Edges = make([]*model.UserEdge, len(page.Edges))
	for i := range page.Edges {
		e := &page.Edges[i]
		edges[i] = model.UserEdge{List: list.cursor, Node: &e.User, At: e.At}
		conn.Edges[i] = &edges[i]
	}
	return conn, nil
}

// page reads the page of a user's list that the paging arguments ask for,
// and starts what the query will ask of the users in it.
func (r *Resolver) page(ctx context.Context, list *listRow[db.Page], user int64, p paging) (db.PageQuery, db.Page, error) {
	q, err := list.args(ctx, user, p)
	if err != nil {
		return q, db.Page{}, err
	}
	page, err := list.fetch(ctx, r, q)
	if err != nil {
		return q, db.Page{}, storeError(ctx, err)
	}
	r.prefetch(ctx, pageIDs(page), connectionNodes...)
	return q, page, nil
}

// pageInfo says what lies beyond the page as the Relay spec does: on the
// side it was read toward, whether the store found more; on the other,
// whether the query gave a cursor there (see PageInfo's description).
func pageInfo(list model.List, q db.PageQuery, page db.Page) *model.PageInfo {
	pi := &model.PageInfo{HasNextPage: page.HasNext, HasPreviousPage: page.HasPrevious, List: list}
	if q.Backward {
		pi.HasNextPage = !q.Before.IsZero()
	} else {
		pi.HasPreviousPage = !q.After.IsZero()
	}
	if n := len(page.Edges); n > 0 {
		pi.Start = db.Cursor{At: page.Edges[0].At, ID: page.Edges[0].User.ID}
		pi.End = db.Cursor{At: page.Edges[n-1].At, ID: page.Edges[n-1].User.ID}
	}
	return pi
}

// connectionNodes are the paths from a connection to its users.
var connectionNodes = [][]string{{"nodes"}, {"edges", "node"}}

func pageIDs(p db.Page) []int64 {
	ids := make([]int64, len(p.Edges))
	for i, e := range p.Edges {
		ids[i] = e.User.ID
	}
	return ids
}
