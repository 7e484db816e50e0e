package resolvers

import (
	"context"

	"follows/db"
	"follows/graph/model"

	"github.com/99designs/gqlgen/graphql"
)

// followEvents streams the viewer's follow events from the store's
// outbox (db.Store.FollowEvents, where the delivery rules live). The
// channel is unbuffered: an event is read from the outbox only when the
// transport has taken the one before, so a slow client holds back its
// own stream, and the transport decides when it is too slow (api's
// subscription limits).
func (r *Resolver) followEvents(ctx context.Context, after *string) (<-chan *model.FollowEvent, error) {
	me, err := r.requireViewer(ctx)
	if err != nil {
		return nil, err
	}
	if me.Deactivated {
		return nil, userError(ctx, CodeForbidden, "your account is deactivated: reactivate it first")
	}
	var from int64
	if after != nil {
		c, err := model.DecodeCursor(model.ListFollowEvents, *after)
		if err != nil {
			return nil, badArg(ctx, "after", "not a cursor of followEvents")
		}
		from = c.ID
	} else if from, err = r.Store.LastEventID(ctx); err != nil {
		// "Now" is when the subscription was accepted, not when its
		// goroutine first runs.
		return nil, storeError(ctx, err)
	}
	events := make(chan *model.FollowEvent)
	go func() {
		defer close(events)
		err := r.Store.FollowEvents(ctx, me.ID, &from, func(e db.Event) error {
			// The users come fresh with each event; what their fields
			// load must not come from an earlier event's loaders.
			freshLoaders(ctx)
			ev := &model.FollowEvent{
				Cursor:   model.EncodeCursor(model.ListFollowEvents, db.Cursor{At: e.At, ID: e.ID}),
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
