package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// User is an account in the follower graph. Its Name is a unique handle.
// The counts are kept on the row (by the count rule: see counts.go), so
// reading them never counts follow rows.
// A deactivated user keeps its rows but is left out of every list and
// every other user's counts until it reactivates.
// SecurityStamp is the account's random stamp, which its bearer tokens
// carry: it dies with the account, so no token passes to a later user
// given the same id. It is never shown to clients.
type User struct {
	ID             int64
	Name           string
	FollowerCount  int
	FollowingCount int
	Deactivated    bool
	SecurityStamp  string
}

// userColumns are the columns of Users AS u that scanDest reads, in order.
const userColumns = "u.Id, u.Name, u.FollowerCount, u.FollowingCount, CASE WHEN u.DeactivatedAt IS NULL THEN 0 ELSE 1 END AS Deactivated, u.SecurityStamp"

func (u *User) scanDest() []any {
	return []any{&u.ID, &u.Name, &u.FollowerCount, &u.FollowingCount, &u.Deactivated, &u.SecurityStamp}
}

// listUserColumns are the columns of a listed user that a dialect's list
// statement may read instead of userColumns (see Store.pages): a list
// holds active users only, and its users are shown, never signed in
// with, so their stamps stay in the database. On PostgreSQL the stamp
// was a fifth of each row's bytes, and its text decoded on every row
// (docs/decisions/postgres-queries.md).
const listUserColumns = "u.Id, u.Name, u.FollowerCount, u.FollowingCount"

// scanListDest is scanDest for listUserColumns.
func (u *User) scanListDest() []any {
	return []any{&u.ID, &u.Name, &u.FollowerCount, &u.FollowingCount}
}

// newStamp returns a random security stamp: 32 hex digits, the form the
// column's default gives rows that other programs insert.
func newStamp() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NameRule says in words what ValidName accepts; the schema's description
// of createUser says the same.
const NameRule = "1 to 32 letters, digits, '_', '.' or '-'"

// ValidName reports whether name is a well-formed handle: 1 to 32 ASCII
// letters, digits, '_', '.' or '-'. ASCII only, because handles are unique
// without regard to case and SQLite folds only ASCII case.
func ValidName(name string) bool { return asciiWord(name, maxName, nameSymbols) }

// maxName and nameSymbols are ValidName's longest handle and the
// characters besides letters and digits it may hold.
const (
	maxName     = 32
	nameSymbols = "_.-"
)

// StampRule says in words what ValidStamp accepts.
const StampRule = "1 to 64 ASCII letters, digits or '-'"

// ValidStamp reports whether s is a well-formed security stamp, as the
// server and the column's default make them (32 hex digits) or another
// program might (a GUID, say).
func ValidStamp(s string) bool { return asciiWord(s, 64, "-") }

// asciiWord reports whether s is 1 to maxLen ASCII letters, digits and the
// characters of punct.
func asciiWord(s string, maxLen int, punct string) bool {
	if len(s) < 1 || len(s) > maxLen {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune(punct, c):
		default:
			return false
		}
	}
	return true
}

// idList passes a batch of ids as one JSON array parameter, so that one
// statement text (and one prepared statement) serves every batch size and
// no batch runs into a driver's parameter limit. No ids is an empty
// array, not JSON's null, which PostgreSQL's array functions refuse.
func idList(ids []int64) string {
	if len(ids) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// CreateUser adds a user with the given handle and a new security stamp.
func (s *Store) CreateUser(ctx context.Context, name string) (User, error) {
	u := User{Name: name, SecurityStamp: newStamp()}
	err := s.inTx(ctx, func(r runner) (err error) {
		u.ID, err = s.insertUser(ctx, r, name, u.SecurityStamp)
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("create user %q: %w", name, err)
	}
	return u, nil
}

// UsersByID returns the users with the given ids, in the order of ids; a
// missing user is nil.
func (s *Store) UsersByID(ctx context.Context, ids []int64) ([]*User, error) {
	// One id, as a request's user(id:) asks, is a plain key lookup: on
	// SQLite the id list's json_each made it much slower
	// (docs/decisions/suggestions-ranked-in-go.md).
	text, arg := s.q.usersByID, any(idList(ids))
	if len(ids) == 1 {
		text, arg = s.q.userByID, ids[0]
	}
	users, err := lookup(ctx, s, text, arg, ids, func(r *rows) (int64, *User, error) {
		var u User
		err := r.Scan(u.scanDest()...)
		return u.ID, &u, err
	})
	if err != nil {
		return nil, fmt.Errorf("load users by id: %w", err)
	}
	return users, nil
}

// UserByName returns the user with the handle name, compared without regard
// to ASCII case, or ErrNotFound.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	var u User
	err := s.read().queryRow(ctx,
		s.q.userByName, []any{name}, u.scanDest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("load user by name: %w", err)
	}
	return u, nil
}

// UsersPage returns a page of the active users, by id ascending. Its
// cursors' ids bound the range; their times are not read.
func (s *Store) UsersPage(ctx context.Context, q PageQuery) (Page, error) {
	// The ids between the cursors', within those of the model's int Id
	// (which every dialect's column holds, and PostgreSQL types its
	// parameters by).
	low, high := int64(1), int64(math.MaxInt32)
	if !q.After.IsZero() {
		low = max(low, min(q.After.ID, high)+1)
	}
	if !q.Before.IsZero() {
		high = min(high, q.Before.ID-1)
	}
	if low > high {
		return Page{}, nil
	}
	rows, err := s.read().query(ctx, s.q.listUsers[q.way()], low, high, q.size()+1)
	if err != nil {
		return Page{}, fmt.Errorf("list users: %w", err)
	}
	users, err := scanUsers(rows)
	if err != nil {
		return Page{}, fmt.Errorf("list users: %w", err)
	}
	// The row past the page tells that more follow on the side it read
	// toward; a backward page read its rows from the end.
	var p Page
	if len(users) > q.size() {
		users = users[:q.size()]
		p.HasNext, p.HasPrevious = !q.Backward, q.Backward
	}
	if q.Backward {
		slices.Reverse(users)
	}
	for _, u := range users {
		p.Edges = append(p.Edges, Edge{User: u})
	}
	return p, nil
}

// CountUsers returns how many active users there are.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.read().queryRow(ctx, `SELECT COUNT(*) FROM Users WHERE DeactivatedAt IS NULL`, nil, &n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

const (
	deleteUserFollows = `DELETE FROM Follows WHERE FollowerId = ? OR FolloweeId = ?`
	deleteUserBlocks  = `DELETE FROM Blocks WHERE BlockerId = ? OR BlockedId = ?`
	deleteUser        = `DELETE FROM Users WHERE Id = ?`
)

// DeleteUser removes a user and every follow and block row it is part of,
// in either direction, in one transaction. It does not rely on ON DELETE CASCADE: only
// FolloweeId cascades, so the rows where the user is the follower would
// otherwise block the delete. It returns how many follow rows went.
//
// The user's row is locked first (see lockAround): on a server database a
// follow by the user could otherwise land between the statements and make
// the last one fail on a foreign key; with it, such a follow waits, and
// then finds the user gone.
func (s *Store) DeleteUser(ctx context.Context, id int64) (deletedFollows int, err error) {
	err = s.inTx(ctx, func(r runner) error {
		if err := lockAround(ctx, r, id); err != nil {
			return err
		}
		res, err := r.exec(ctx, deleteUserFollows, id, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		// Blocks go too; only BlockedId cascades, as for follows.
		if _, err := r.exec(ctx, deleteUserBlocks, id, id); err != nil {
			return err
		}
		res, err = r.exec(ctx, deleteUser, id)
		if err != nil {
			return err
		}
		if gone, err := res.RowsAffected(); err != nil {
			return err
		} else if gone == 0 {
			return ErrNotFound
		}
		deletedFollows = int(n)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete user %d: %w", id, err)
	}
	return deletedFollows, nil
}

func scanUsers(rows *rows) ([]User, error) {
	defer rows.Close()
	var users []User
	for rows.Next() {
		var u User
		if err := rows.Scan(u.scanDest()...); err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

// lockAround locks, where the dialect has row locks (rowLocker), a user
// and the users around it, whose counts deleting or deactivating it
// changes, in Id order as every write transaction locks users (see
// docs/architecture.md, "Lock order"). A user that is not there is
// ErrNotFound.
//
// The users around are read before their rows are locked, so a follow of
// the user that commits in between (while this waits for the user's row,
// which the follow holds) adds a user that is not locked; the count
// trigger would then lock it, out of order, and deadlock with a writer
// that holds it and waits for a user locked here. So once the user is
// locked, and no follow of it can commit, the users around are read
// again; if some are new, the locks are let go (lockReleaser) and the
// users read so far locked again, in order, as long as new ones turn up
// (maxLockRounds). A dialect that cannot let row locks go runs the
// transaction again instead (errRetry).
func lockAround(ctx context.Context, r runner, id int64) error {
	if _, ok := r.s.d.(rowLocker); !ok {
		return nil
	}
	release, canRelease := r.s.d.(lockReleaser)
	var set, rollback string
	if canRelease {
		set, rollback = release.savepoint()
		if _, err := r.exec(ctx, set); err != nil {
			return err
		}
	}
	locked, err := readIDs(ctx, r, r.s.q.lockAroundUser, id, id, id)
	for round := 1; ; round++ {
		if err != nil {
			return err
		}
		held := make(map[int64]bool, len(locked)) // a followed account's may be many
		for _, u := range locked {
			held[u] = true
		}
		if !held[id] {
			return ErrNotFound
		}
		var around []int64
		if around, err = readIDs(ctx, r, aroundUser, id, id, id); err != nil {
			return err
		}
		if !slices.ContainsFunc(around, func(u int64) bool { return !held[u] }) {
			return nil
		}
		if !canRelease || round == maxLockRounds {
			return busy(fmt.Errorf("the users around user %d changed while they were being locked", id))
		}
		if _, err = r.exec(ctx, rollback); err != nil {
			return err
		}
		locked, err = readIDs(ctx, r, r.s.q.lockUsers, idList(append(locked, around...)))
	}
}

// maxLockRounds bounds how often lockAround locks the users around a user
// that gained followers or followees while it waited.
const maxLockRounds = 4

// readIDs runs a statement whose rows are one id each.
func readIDs(ctx context.Context, r runner, text string, args ...any) ([]int64, error) {
	rows, err := r.query(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ids, rows.Close()
}
