-- The server's sessions run without JIT: PostgreSQL estimates a JSON
-- batch parameter at 100 rows, which put the suggestions statement past
-- jit_above_cost, and compiling it took about half its time
-- (docs/decisions/postgres-tuning.md). A setting of the migrating role in
-- this database rather than a connection parameter, which a pooler such
-- as PgBouncer refuses (docs/pgbouncer.md); it holds for that role's
-- sessions that start after it, on a replica too. A role may always
-- change its own settings; where it still may not, the migration goes
-- on and the server warns at start (checkSession in
-- db/postgres_pooled.go).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'jit stays as it is: %', SQLERRM;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I RESET jit', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'jit stays as it is: %', SQLERRM;
END
$$;
-- +goose StatementEnd
