package resolvers

import (
	"context"
	"strconv"

	"follows/auth"
	"follows/db"
	"follows/graph/model"
)

// parseID reads a user id argument: the decimal database id.
func parseID(ctx context.Context, arg, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badArg(ctx, arg, "%q is not a user id", truncate(s, 40))
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// viewer returns the signed-in user, or nil when the request is anonymous,
// its token is bad, or the token's user has been deleted.
func (r *Resolver) viewer(ctx context.Context) (*db.User, error) {
	id, err := auth.Viewer(ctx)
	if err != nil {
		return nil, nil
	}
	u, err := r.loadersFor(ctx).users.Load(ctx, id)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	return u, nil
}

// requireViewer returns the signed-in user or an UNAUTHENTICATED error
// saying why there is none. A token stops working when its user is gone.
func (r *Resolver) requireViewer(ctx context.Context) (*db.User, error) {
	id, err := auth.Viewer(ctx)
	if err != nil {
		return nil, authError(ctx, err)
	}
	u, err := r.loadersFor(ctx).users.Load(ctx, id)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	if u == nil {
		return nil, userError(ctx, CodeUnauthenticated, "the token's user no longer exists")
	}
	return u, nil
}

// viewerAndTarget returns the signed-in user and the user a mutation's
// input.userId names.
func (r *Resolver) viewerAndTarget(ctx context.Context, userID string) (*db.User, int64, error) {
	me, err := r.requireViewer(ctx)
	if err != nil {
		return nil, 0, err
	}
	id, err := parseID(ctx, "input.userId", userID)
	if err != nil {
		return nil, 0, err
	}
	return me, id, nil
}

// visible hides a deactivated user from everyone but itself.
func visible(ctx context.Context, u *db.User) *db.User {
	if u == nil || !u.Deactivated {
		return u
	}
	if me, err := auth.Viewer(ctx); err == nil && me == u.ID {
		return u
	}
	return nil
}

func (r *Resolver) setDeactivated(ctx context.Context, deactivated bool) (*model.DeactivatePayload, error) {
	me, err := r.requireViewer(ctx)
	if err != nil {
		return nil, err
	}
	u, _, err := r.Store.SetDeactivated(ctx, me.ID, deactivated)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	r.wrote(ctx, &u)
	return &model.DeactivatePayload{User: &u, Deactivated: u.Deactivated}, nil
}
