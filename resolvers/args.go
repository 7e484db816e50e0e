package resolvers

import (
	"context"
	"errors"
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

// errUserGone is why a request whose token verified has no viewer: the
// token's user was deleted, or its id now belongs to another account
// (whose stamp is not the token's).
var errUserGone = errors.New("the token's user no longer exists")

// me is the one way to the signed-in user: the user the request's token
// names, once its row is found and carries the token's stamp. Otherwise me
// is nil and why says why (auth's errors, or errUserGone); err is a store
// failure. The row comes through the request's users loader, so a request
// looks its viewer up once however many fields ask, and in the same batch
// as other users loaded at the time.
//
// Both kinds of token end here the same way: a provider's token claims
// the id and stamp of the account its subject was found (or provisioned)
// with (see auth.Viewer), so a deleted account's token names no row and a
// deactivated one's viewer meets the same refusals as with the server's
// own token.
func (r *Resolver) me(ctx context.Context) (me *db.User, why, err error) {
	claim, why := auth.Viewer(ctx)
	if errors.Is(why, auth.ErrAccountLookup) {
		return nil, nil, storeError(ctx, why)
	}
	if why != nil {
		return nil, why, nil
	}
	u, err := r.loadersFor(ctx).users.Load(ctx, claim.UserID)
	if err != nil {
		return nil, nil, storeError(ctx, err)
	}
	if u == nil || !claim.Holds(u.ID, u.SecurityStamp) {
		return nil, errUserGone, nil
	}
	return u, nil, nil
}

// viewer returns the signed-in user, or nil when the request is anonymous,
// its token is bad, or the token's user is gone.
func (r *Resolver) viewer(ctx context.Context) (*db.User, error) {
	me, _, err := r.me(ctx)
	return me, err
}

// viewerID is the signed-in user's id; ok is false when there is none.
func (r *Resolver) viewerID(ctx context.Context) (id int64, ok bool, err error) {
	me, _, err := r.me(ctx)
	if me == nil || err != nil {
		return 0, false, err
	}
	return me.ID, true, nil
}

// requireViewer returns the signed-in user or an UNAUTHENTICATED error
// saying why there is none.
func (r *Resolver) requireViewer(ctx context.Context) (*db.User, error) {
	me, why, err := r.me(ctx)
	if err != nil {
		return nil, err
	}
	if me == nil {
		return nil, authError(ctx, why)
	}
	return me, nil
}

// requireSelf refuses, as FORBIDDEN with the message given, what only a
// user itself may see.
func (r *Resolver) requireSelf(ctx context.Context, user int64, format string, args ...any) error {
	me, ok, err := r.viewerID(ctx)
	if err != nil {
		return err
	}
	if !ok || me != user {
		return userError(ctx, CodeForbidden, format, args...)
	}
	return nil
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
func (r *Resolver) visible(ctx context.Context, u *db.User) (*db.User, error) {
	if u == nil || !u.Deactivated {
		return u, nil
	}
	me, ok, err := r.viewerID(ctx)
	if err != nil || !ok || me != u.ID {
		return nil, err
	}
	return u, nil
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
