package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Storage trouble is reported, not hidden: a write refused for want of
// space is ErrStorageFull (and the store not ready until a write succeeds
// again), a database file with corrupted pages is refused at start, and an
// error opening a database names it.

// ErrStorageFull is a write the database refused because its storage is
// full: the disk, or the file's size limit. Nothing of the write was kept.
var ErrStorageFull = errors.New("the database's storage is full")

// ErrCorrupt is a database file that is damaged, or not a database.
var ErrCorrupt = errors.New("the file is corrupt or not a database")

// ErrNoAnswer is Ready's error when the database does not answer.
var ErrNoAnswer = errors.New("the database does not answer")

// DefaultIntegrityLimit bounds the integrity check Open runs on a SQLite
// file: PRAGMA quick_check reads every page, which for a file of hundreds
// of megabytes takes longer than a start should.
const DefaultIntegrityLimit = 5 * time.Second

// WithIntegrityLimit sets how long Open's integrity check of a SQLite file
// may run (DefaultIntegrityLimit when not given).
func WithIntegrityLimit(d time.Duration) Option {
	return func(s *Store) { s.integrityLimit = d }
}

// CorruptError is a SQLite file whose integrity check found damage. Open
// refuses it: the server would otherwise answer from it until a request
// met the damaged pages.
type CorruptError struct {
	Problems []string // quick_check's first lines
}

func (e *CorruptError) Error() string {
	if len(e.Problems) > 0 && e.Problems[0] == unfinishedImport {
		// Not damage quick_check found, and export would refuse it too.
		return unfinishedImport
	}
	return "the file is corrupt (PRAGMA quick_check): " + strings.Join(e.Problems, "; ") +
		"; restore it from a backup or export what can be read"
}

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// health is what the store knows of its storage beyond whether the
// database answers.
type health struct {
	mu        sync.Mutex
	fullSince time.Time // when a write last failed for want of space; zero once one succeeds
	fullErr   error
}

// wrote records how a write transaction ended: refused for want of space,
// or committed. Other failures say nothing of the storage.
func (h *health) wrote(err error) {
	full := errors.Is(err, ErrStorageFull)
	if err != nil && !full {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case full && h.fullSince.IsZero():
		h.fullSince, h.fullErr = time.Now(), err
	case !full:
		h.fullSince, h.fullErr = time.Time{}, nil
	}
}

// Ready reports whether the store can serve: nil, or ErrNoAnswer when the
// database does not answer, or ErrStorageFull from a write refused for
// want of space until a later write succeeds (a readiness probe is the one
// place that says so before a client's write fails).
func (s *Store) Ready(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if !s.health.fullSince.IsZero() {
		return fmt.Errorf("writes fail since %s: %w", s.health.fullSince.UTC().Format(time.RFC3339), s.health.fullErr)
	}
	return nil
}

// location names a database in errors (see dialect.location).
func location(d dialect, dsn string) string { return d.location(dsn) }

// serverLocation names a server's database in errors: its host and
// database, never its credentials.
func serverLocation(name, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return name + " database"
	}
	db := u.Query().Get("database")
	if db == "" {
		db = strings.TrimPrefix(u.Path, "/")
	}
	return fmt.Sprintf("%s database %s on %s", name, db, u.Host)
}

// quickCheck runs the dialect's integrity check and returns its first
// lines.
func (s *Store) quickCheck(ctx context.Context) (problems []string, err error) {
	rows, err := s.db.QueryContext(ctx, s.d.(integrityChecker).integrityCheck())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() && len(problems) < 10 {
		var line string
		if err := rows.Scan(&line); err != nil {
			return problems, err
		}
		problems = append(problems, line)
	}
	return problems, rows.Err()
}

// checkIntegrity runs SQLite's quick_check on the open file, for at most
// the store's integrity limit, and records in Integrity how far it got. A
// file with damage is a CorruptError.
func (s *Store) checkIntegrity(ctx context.Context) error {
	checker, ok := s.d.(integrityChecker)
	if !ok {
		return nil
	}
	limit := s.integrityLimit
	if limit == 0 {
		limit = DefaultIntegrityLimit
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var problems []string
	var err error
	// Instances starting together on one new file can find it busy for a
	// moment, and SQLite says so at once rather than waiting: a pooled
	// connection sets WAL mode as it opens, which wants the file to
	// itself, while another instance is still migrating it (seen once in
	// CI in TestOpenConcurrently). The check only reads; it tries again,
	// for about three seconds in all.
	for wait := 25 * time.Millisecond; ; wait *= 2 {
		problems, err = s.quickCheck(cctx)
		if !checker.busy(err) || wait > 2*time.Second {
			break
		}
		select {
		case <-cctx.Done():
		case <-time.After(wait):
		}
	}
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		s.Integrity = fmt.Sprintf("not fully checked: quick_check did not finish within %s", limit)
		return nil
	case err != nil:
		return fmt.Errorf("check the file's integrity: %w", s.d.classify(err))
	case len(problems) == 1 && problems[0] == "ok":
		s.Integrity = "ok"
		return nil
	}
	return &CorruptError{Problems: problems}
}
