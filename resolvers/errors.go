package resolvers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"follows/auth"
	"follows/db"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The error codes clients see in extensions.code.
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeInternal        = "INTERNAL_SERVER_ERROR"
	// CodeStorageFull is a write the database refused for want of space;
	// nothing of it was kept, and it may succeed later.
	CodeStorageFull = "STORAGE_FULL"
	// CodeIDsExhausted is a new account refused because the database has
	// given out the highest user id there can be (db.MaxUserID). Retrying
	// does not help; other writes still succeed.
	CodeIDsExhausted = "IDS_EXHAUSTED"
	// CodeServerBusy is a write that lost its races with other writes
	// (run again a bounded number of times) or waited its limit for a
	// lock; nothing of it was kept, and it may succeed if tried again.
	CodeServerBusy = "SERVER_BUSY"
)

// userError is an error the client caused and may read in full.
func userError(ctx context.Context, code, format string, args ...any) *gqlerror.Error {
	return &gqlerror.Error{
		Message:    fmt.Sprintf(format, args...),
		Path:       graphql.GetPath(ctx),
		Extensions: map[string]any{"code": code},
	}
}

// badArg is a BAD_USER_INPUT error that names the argument at fault.
func badArg(ctx context.Context, arg, format string, args ...any) *gqlerror.Error {
	e := userError(ctx, CodeBadUserInput, arg+": "+format, args...)
	e.Extensions["argument"] = arg
	return e
}

// internalError is a failure the client did not cause. Its text, which may
// hold SQL or driver detail, is logged and never sent.
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

// serviceError is a failure the client did not cause but may be told of,
// with a code of its own: it is logged with its detail, as an internal
// error is, and sent with its code and message.
type serviceError struct {
	code, message string
	err           error
}

func (e serviceError) Error() string { return e.message + ": " + e.err.Error() }
func (e serviceError) Unwrap() error { return e.err }

// storeError turns a store error into what the client should see: the
// store's sentinel errors become coded user errors, anything else is
// internal.
func storeError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, db.ErrStorageFull):
		return serviceError{CodeStorageFull, "the server's storage is full, so nothing was written; try again later", err}
	case errors.Is(err, db.ErrIDsExhausted):
		return serviceError{CodeIDsExhausted, "no new accounts can be made: the server has given out every user id it can", err}
	case errors.Is(err, db.ErrBusy):
		return serviceError{CodeServerBusy, "the server is busy with other writes, so nothing was written; try again", err}
	case errors.Is(err, db.ErrSelfFollow):
		return userError(ctx, CodeBadUserInput, "cannot follow yourself")
	case errors.Is(err, db.ErrSelfBlock):
		return userError(ctx, CodeBadUserInput, "cannot block yourself")
	case errors.Is(err, db.ErrBlocked):
		return userError(ctx, CodeForbidden, "blocked: one of you blocks the other")
	case errors.Is(err, db.ErrDeactivated):
		return userError(ctx, CodeForbidden, "your account is deactivated: reactivate it first")
	case errors.Is(err, db.ErrNameTaken):
		return userError(ctx, CodeBadUserInput, "that name is taken")
	case errors.Is(err, db.ErrFollowerNotFound):
		return userError(ctx, CodeUnauthenticated, "the token's user no longer exists")
	case errors.Is(err, db.ErrNotFound):
		return userError(ctx, CodeNotFound, "no such user")
	case errors.Is(err, db.ErrStillReferenced):
		return userError(ctx, CodeForbidden, "cannot delete the user: rows of another application's table still refer to it")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return userError(ctx, CodeInternal, "the request was cancelled or timed out")
	}
	return internalError{err}
}

// authError says why a request that needs a viewer has none.
func authError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, auth.ErrNoToken):
		return userError(ctx, CodeUnauthenticated, "sign in: send Authorization: Bearer <token>")
	case errors.Is(err, auth.ErrExpiredToken):
		return userError(ctx, CodeUnauthenticated, "the bearer token has expired")
	case errors.Is(err, errUserGone):
		return userError(ctx, CodeUnauthenticated, "the token's user no longer exists")
	case errors.Is(err, auth.ErrUnknownSubject):
		return userError(ctx, CodeUnauthenticated, "no account here for this sign-in: the server does not create accounts for the identity provider's users (-oidc-provision)")
	}
	return userError(ctx, CodeUnauthenticated, "the bearer token is not valid")
}

// ErrorPresenter shapes every error in a response. Errors of our own
// resolvers already carry a code. Internal ones are logged with their
// detail and sent as a bare INTERNAL_SERVER_ERROR; service errors are
// logged too, and sent with their code and message. The rest come from
// gqlgen's checking of the request against the schema (argument values
// that do not coerce, for one) and are the client's to fix.
func ErrorPresenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		if se, ok := errors.AsType[serviceError](err); ok {
			log.ErrorContext(ctx, se.message, "code", se.code, "path", graphql.GetPath(ctx).String(), "err", se.err)
			return &gqlerror.Error{
				Message:    se.message,
				Path:       graphql.GetPath(ctx),
				Extensions: map[string]any{"code": se.code},
			}
		}
		if ie, ok := errors.AsType[internalError](err); ok {
			log.ErrorContext(ctx, "internal error", "path", graphql.GetPath(ctx).String(), "err", ie.err)
			return &gqlerror.Error{
				Message:    "internal server error",
				Path:       graphql.GetPath(ctx),
				Extensions: map[string]any{"code": CodeInternal},
			}
		}
		e := graphql.DefaultErrorPresenter(ctx, err)
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		if _, ok := e.Extensions["code"]; !ok {
			e.Extensions["code"] = CodeBadUserInput
		}
		return e
	}
}

// Recover turns a panic in a resolver into an internal error, logged with
// its stack.
func Recover(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in resolver", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return internalError{fmt.Errorf("panic: %v", p)}
	}
}
