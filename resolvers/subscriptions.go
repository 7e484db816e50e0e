package resolvers

import (
	"context"
	"errors"

	"follows/db"
	"follows/graph/model"

	"github.com/99designs/gqlgen/graphql"
)

// Codes of a followEvents resume the server will not replay.
const (
	// CodeCursorExpired is a cursor that can no longer resume: further
	// back than a resume may replay, or of the unsigned form of earlier
	// versions. The client refetches what it shows and subscribes
	// without a cursor.
	CodeCursorExpired = "CURSOR_EXPIRED"
	// CodeReplayLimit is a resume while the server, or the viewer,
	// already replays as many as it may: the client retries shortly.
	CodeReplayLimit = "REPLAY_LIMIT"
)

// cursors is what signs event cursors: the server's secret, as the
// wiring gives it, or the token signer's.
func (r *Resolver) cursors() model.CursorSigner {
	if r.Cursors != nil {
		return r.Cursors
	}
	return r.Tokens
}

// followEvents streams the viewer's follow events from the store's
// outbox (db.Store.FollowEvents, where the delivery rules live). The
// channel is unbuffered: an event is read from the outbox only when the
// transport has taken the one before, so a slow client holds back its
// own stream, and the transport decides when it is too slow (api's
// subscription limits). A resume is refused, with its code, before the
// stream starts: a cursor not signed by the server for this viewer, one
// too far back, or one while too many replays run.
func (r *Resolver) followEvents(ctx context.Context, after *string) (<-chan *model.FollowEvent, error) {
	me, err := r.requireViewer(ctx)
	if err != nil {
		return nil, err
	}
	if me.Deactivated {
		return nil, userError(ctx, CodeForbidden, "your account is deactivated: reactivate it first")
	}
	var from *int64
	if after != nil {
		id, err := model.DecodeEventCursor(r.cursors(), me.ID, *after)
		if err != nil {
			return nil, cursorError(ctx, err)
		}
		from = &id
	}
	// "Now" is when the subscription was accepted, not when its
	// goroutine first runs.
	stream, err := r.Store.OpenFollowEvents(ctx, me.ID, from)
	if err != nil {
		return nil, cursorError(ctx, err)
	}
	events := make(chan *model.FollowEvent)
	go func() {
		defer close(events)
		err := stream.Run(ctx, func(e db.Event) error {
			// The users come fresh with each event; what their fields
			// load must not come from an earlier event's loaders.
			freshLoaders(ctx)
			ev := &model.FollowEvent{
				Cursor:   model.EncodeEventCursor(r.cursors(), me.ID, e.ID),
				Kind:     model.FollowEventKindFollowed,
				Follower: &e.Follower,
				Followee: &e.Followee,
				At:       e.At,
			}
			if e.Kind == db.EventUnfollowed {
				ev.Kind = model.FollowEventKindUnfollowed
			}
			select {
			case events <- ev:
				eventTaken(ctx) // its resolution has a deadline now
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && ctx.Err() == nil {
			// Ends the stream with an error rather than as if complete.
			graphql.AddError(ctx, storeError(ctx, err))
		}
	}()
	return events, nil
}

// cursorError is why a resume from the cursor in `after` is refused.
func cursorError(ctx context.Context, err error) error {
	expired := func(why string) error {
		e := userError(ctx, CodeCursorExpired, "after: this cursor %s: refetch, and subscribe without after", why)
		e.Extensions["argument"] = "after"
		return e
	}
	switch {
	case errors.Is(err, model.ErrOldEventCursor):
		return expired("is of an earlier server version and resumes nothing")
	case errors.Is(err, db.ErrCursorTooOld):
		return expired("is further back than a resume may replay")
	case errors.Is(err, model.ErrOtherViewersCursor):
		return badArg(ctx, "after", "a cursor of another viewer's followEvents")
	case errors.Is(err, model.ErrBadCursor):
		return badArg(ctx, "after", "not a cursor of followEvents")
	case errors.Is(err, db.ErrReplayLimit):
		return userError(ctx, CodeReplayLimit, "too many resumes are replaying at once, yours or on this server: retry in a few seconds")
	}
	return storeError(ctx, err)
}
