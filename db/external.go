package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Accounts that sign in through an OpenID Connect provider carry the
// provider's subject in Users.ExternalId, unique where set (migration
// 00007). A deleted account's row is gone, and its subject with it: the
// subject signing in again finds no account, and is given a new one.
// Every dialect's column holds any subject auth.ValidSubject accepts.

const (
	userByExternalID = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.ExternalId = ?`
	setExternalID    = `UPDATE Users SET ExternalId = ? WHERE Id = ?`
)

// UserByExternalID returns the user whose ExternalId is subject, or
// ErrNotFound.
func (s *Store) UserByExternalID(ctx context.Context, subject string) (User, error) {
	var u User
	err := s.read().queryRow(ctx, userByExternalID, []any{subject}, u.scanDest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("load user by external id: %w", err)
	}
	return u, nil
}

// provisionTries is how many names ProvisionUser tries: the name asked
// for, then with 2, 3, ... appended, then with random suffixes.
const provisionTries = 12

// ProvisionUser returns the user whose ExternalId is subject, creating it
// when there is none, named after name (see ProvisionName) and made unique
// with a suffix when that name is taken. Replicas provisioning the same
// subject at once make one account: the unique index on ExternalId
// refuses all inserts but one, and the others then find that one.
func (s *Store) ProvisionUser(ctx context.Context, subject, name string) (User, error) {
	base := ProvisionName(name)
	for try := 1; ; try++ {
		u, err := s.UserByExternalID(ctx, subject)
		if !errors.Is(err, ErrNotFound) {
			return u, err
		}
		u, err = s.createExternal(ctx, subject, nameCandidate(base, try))
		if err == nil {
			return u, nil
		}
		// Whatever refused the insert, a concurrent provisioning of the
		// same subject may be why: the next round's lookup finds it.
		if !errors.Is(err, ErrNameTaken) && !isConflict(ctx, s, subject) {
			return User{}, fmt.Errorf("provision user for external id: %w", err)
		}
		if try == provisionTries {
			return User{}, fmt.Errorf("provision user for external id: no free name like %q after %d tries: %w", base, try, err)
		}
	}
}

// isConflict reports whether subject has an account now: then the insert
// that failed lost a race to another provisioning of it.
func isConflict(ctx context.Context, s *Store, subject string) bool {
	_, err := s.UserByExternalID(ctx, subject)
	return err == nil
}

// createExternal adds a user named name for subject, in one transaction.
func (s *Store) createExternal(ctx context.Context, subject, name string) (User, error) {
	u := User{Name: name, SecurityStamp: newStamp()}
	err := s.inTx(ctx, func(r runner) error {
		var err error
		if u.ID, err = s.insertUser(ctx, r, name, u.SecurityStamp); err != nil {
			return err
		}
		_, err = r.exec(ctx, setExternalID, subject, u.ID)
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("create user %q: %w", name, err)
	}
	return u, nil
}

// ProvisionName turns a provider's name claim into a handle ValidName
// accepts: each character a handle cannot hold becomes '_', and it is cut
// to the longest handle. An empty claim is "user".
func ProvisionName(claim string) string {
	var b strings.Builder
	for _, c := range claim {
		if b.Len() == maxName {
			break
		}
		if !asciiWord(string(c), 1, nameSymbols) {
			c = '_'
		}
		b.WriteRune(c)
	}
	if b.Len() == 0 {
		return "user"
	}
	return b.String()
}

// nameCandidate is the try'th name ProvisionUser tries for base: base,
// then base2, base3, ..., then base and a random suffix; base is cut so
// that the suffix fits in a handle.
func nameCandidate(base string, try int) string {
	if try == 1 {
		return base
	}
	suffix := strconv.Itoa(try)
	if try > provisionTries/2 {
		suffix = "-" + newStamp()[:8]
	}
	return base[:min(len(base), maxName-len(suffix))] + suffix
}

// AccountFor returns the id and security stamp of subject's account,
// provisioning it, named after name, when create is set; id 0 when there
// is none. It is what sign-in through a provider asks of the store (see
// auth.Accounts).
func (s *Store) AccountFor(ctx context.Context, subject, name string, create bool) (id int64, stamp string, err error) {
	var u User
	if create {
		u, err = s.ProvisionUser(ctx, subject, name)
	} else {
		u, err = s.UserByExternalID(ctx, subject)
	}
	if errors.Is(err, ErrNotFound) {
		return 0, "", nil
	}
	return u.ID, u.SecurityStamp, err
}
