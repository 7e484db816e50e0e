-- A random stamp on every account, which each bearer token carries and
-- which dies with the account: a token no longer names whoever holds its
-- user id, but the one account that held it when it was minted (ASP.NET
-- Identity's SecurityStamp, under its name).
--
-- SQLite's ADD COLUMN refuses a non-constant default on a table with rows,
-- and rebuilding Users would cascade into Follows and must know every
-- column an EF Core app gave it. So the column's default is '' and a
-- trigger gives every row inserted with it a random stamp, whoever the
-- writer: an EF Core app that knows nothing of the column gets one too. An
-- empty stamp would match no token (see auth.Claim.Holds) rather than
-- every token.

-- +goose Up
ALTER TABLE "Users" ADD COLUMN "SecurityStamp" TEXT NOT NULL DEFAULT '';
UPDATE "Users" SET "SecurityStamp" = lower(hex(randomblob(16)));

-- +goose StatementBegin
CREATE TRIGGER "TR_Users_SecurityStamp" AFTER INSERT ON "Users"
WHEN NEW."SecurityStamp" = '' BEGIN
    UPDATE "Users" SET "SecurityStamp" = lower(hex(randomblob(16))) WHERE "Id" = NEW."Id";
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Users_SecurityStamp";
ALTER TABLE "Users" DROP COLUMN "SecurityStamp";
