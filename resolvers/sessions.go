package resolvers

import (
	"context"

	"follows/auth"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// ErrAccountGone is why a credential that verified signs no one in any
// more: its account was deleted, or its security stamp changed.
var ErrAccountGone = errUserGone

// SignedIn applies to ctx the rule every request's viewer meets (see me):
// the credential verified, and the account it names still carries the
// stamp it was issued with. why is nil when it holds, else auth's error or
// ErrAccountGone; err is a failure to look the account up, which says
// nothing either way. A connection that outlives the request it came
// with (a websocket) asks at connection_init and before each operation,
// through the operation's loaders (ForOperation), so that the operation
// finds the row there and does not look it up twice.
func (r *Resolver) SignedIn(ctx context.Context) (why, err error) {
	me, why, err := r.me(ctx)
	if err != nil {
		return nil, err
	}
	if me == nil && why == nil {
		why = auth.ErrNoToken
	}
	return why, nil
}

// AuthError is the coded error (UNAUTHENTICATED) an operation is refused
// with when SignedIn says why there is no viewer.
func AuthError(ctx context.Context, why error) *gqlerror.Error {
	return authError(ctx, why).(*gqlerror.Error)
}
