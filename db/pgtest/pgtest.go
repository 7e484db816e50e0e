// Package pgtest gives a test a PostgreSQL database of its own, on the
// server that POSTGRES_DSN names, or skips the test saying what it needs.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Env is the variable that names the server: a postgres:// URL whose role
// may create databases (CI's .ci/run sets it).
const Env = "POSTGRES_DSN"

// Available reports whether Env names a server.
func Available() bool { return os.Getenv(Env) != "" }

// SkipMessage is what a test without a server says, naming what skipped.
func SkipMessage(what string) string {
	return "SKIPPED: " + what + " needs " + Env + " (e.g. postgres://follows:follows@127.0.0.1:5432/follows, a role with CREATEDB)"
}

// DSN creates an empty database, follows_test_ and random hex, through
// Env's connection, and returns the DSN that reaches it; the database is
// dropped when the test ends, connections still open to it or not.
// Without Env, the test is skipped, saying that what needs it.
func DSN(t testing.TB, what string) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skip(SkipMessage(what))
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL: %q", Env, base)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := "follows_test_" + hex.EncodeToString(b)
	// A database name cannot be a parameter; this one is ours, quoted.
	quoted := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+quoted); err != nil {
		admin.Close()
		t.Fatalf("create a test database on %s: %v", u.Redacted(), err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE ends our own sessions, but not one of another role: an
		// autovacuum worker that has just started on the new database
		// refuses it (42501, seen on a busy machine). It finishes in
		// moments, so try again for a while before calling it a failure.
		drop := "DROP DATABASE IF EXISTS " + quoted + " WITH (FORCE)"
		_, err := admin.ExecContext(ctx, drop)
		for try := 0; err != nil && try < 50 && ctx.Err() == nil; try++ {
			time.Sleep(200 * time.Millisecond)
			_, err = admin.ExecContext(ctx, drop)
		}
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// PgBouncerEnv names a PgBouncer in transaction pooling mode in front of
// Env's server, every database name passed through (a "*" entry in its
// [databases]): a postgres:// URL whose host, port, user, password and
// parameters the tests' DSNs through it take (CI's .ci/run sets it).
const PgBouncerEnv = "PGBOUNCER_DSN"

// PooledExecMode is the pgx default_query_exec_mode a DSN through
// PgBouncer gets when PgBouncerEnv sets none: one without named prepared
// statements, which PgBouncer 1.18 does not keep across transactions.
const PooledExecMode = "simple_protocol"

// PgBouncerAvailable reports whether PgBouncerEnv and Env both name one.
func PgBouncerAvailable() bool { return Available() && os.Getenv(PgBouncerEnv) != "" }

// PgBouncerSkipMessage is what a test without a PgBouncer says.
func PgBouncerSkipMessage(what string) string {
	return "SKIPPED: " + what + " needs " + PgBouncerEnv + " (e.g. postgres://follows:follows@127.0.0.1:6432/follows, a PgBouncer in transaction mode in front of " + Env + "'s server) and " + Env
}

// PooledDSN creates a database as DSN does, directly on Env's server, and
// returns the DSN that reaches it through PgBouncerEnv's pooler (with
// PooledExecMode unless PgBouncerEnv sets a mode) and the direct one,
// for what needs a session (LISTEN). Without both variables the test is
// skipped.
func PooledDSN(t testing.TB, what string) (pooled, direct string) {
	t.Helper()
	bouncer := os.Getenv(PgBouncerEnv)
	if bouncer == "" || !Available() {
		t.Skip(PgBouncerSkipMessage(what))
	}
	direct = DSN(t, what)
	d, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p, err := url.Parse(bouncer)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL: %q", PgBouncerEnv, bouncer)
	}
	p.Path = d.Path
	q := p.Query()
	if !q.Has("default_query_exec_mode") {
		q.Set("default_query_exec_mode", PooledExecMode)
	}
	p.RawQuery = q.Encode()
	return p.String(), direct
}
