-- A random stamp on every account, which each bearer token carries and
-- which dies with the account: a token no longer names whoever holds its
-- user id, but the one account that held it when it was minted (ASP.NET
-- Identity's SecurityStamp, under its name). The default gives every row,
-- existing or inserted by any writer (an EF Core app that knows nothing of
-- the column), a stamp of its own.

-- +goose Up
ALTER TABLE "Users" ADD "SecurityStamp" varchar(32) NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');

-- +goose Down
ALTER TABLE "Users" DROP COLUMN "SecurityStamp";
