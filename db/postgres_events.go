package db

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL wakes other processes' subscribers with NOTIFY, sent on
// commit, and each process LISTENs on a connection of its own
// (eventListener); one advisory lock (its key is "FollowEv" in ASCII) held
// to the commit orders the event Ids (eventLocker).

// eventChannel is the notification channel that the writers of events
// notify with the event's Id.
const eventChannel = "follow_events"

func (*postgresDialect) lockEvents() string {
	return `SELECT pg_advisory_xact_lock(5075394518052193654)`
}

func (*postgresDialect) notifyEvent() string { return `SELECT pg_notify('` + eventChannel + `', ?)` }

func (*postgresDialect) listenEvents(ctx context.Context, connStr string, caughtUp func(context.Context) error, saw func(id int64)) error {
	conn, err := pgx.Connect(ctx, connStr)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+eventChannel); err != nil {
		return err
	}
	// Whatever committed before LISTEN took effect.
	if err := caughtUp(ctx); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			return errors.New("event notification without an id: " + n.Payload)
		}
		saw(id)
	}
}
