package db

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// MaxUserID is the highest user id the store gives or takes. The model's
// Id is an int: PostgreSQL's and SQL Server's Users.Id columns are 32-bit
// integers and stop there, EF Core's entity reads it into an int, and the
// users pages stop their ranges there (see UsersPage). SQLite's INTEGER
// would go on to 2^63-1, so the bound is the store's to keep: an import
// refuses an id or a LastUserId above it, and a sign-up past it is
// ErrIDsExhausted on every dialect. It also keeps ids well inside the
// integers a JavaScript client holds exactly (2^53).
const MaxUserID = math.MaxInt32

// ErrIDsExhausted is a new user refused because the ids are used up: the
// database has given out MaxUserID, or its sequence is at its end. It is
// not a full disk: other writes still succeed, so the store stays ready.
var ErrIDsExhausted = errors.New("no user ids are left to give")

// insertUser inserts a user by name and stamp in r's transaction and
// returns its id, or ErrIDsExhausted. PostgreSQL and SQL Server say so
// themselves (see their classify); SQLite gives ids past MaxUserID, which
// are refused here, and at 2^63-1 refuses with SQLITE_FULL, the code of a
// full disk, told apart here by the sequence being at its end.
func (s *Store) insertUser(ctx context.Context, r runner, name, stamp string) (int64, error) {
	var id int64
	err := r.queryRow(ctx, s.q.insertUser, []any{name, stamp}, &id)
	if err == nil && id > MaxUserID {
		return 0, fmt.Errorf("%w: the next id would be %d, above %d", ErrIDsExhausted, id, int64(MaxUserID))
	}
	if err != nil && errors.Is(s.d.classify(err), ErrStorageFull) {
		if last, lerr := s.d.lastUserID(ctx, r); lerr == nil && last >= MaxUserID {
			// Not wrapped: err would classify as a full disk again,
			// and fail the store's readiness.
			return 0, fmt.Errorf("%w: the last id given is %d (%v)", ErrIDsExhausted, last, err)
		}
	}
	if err == nil {
		// The new user's first requests, a token's on another instance
		// among them, must find it: they read where its row is.
		err = r.wrote(ctx, id)
	}
	return id, err
}
