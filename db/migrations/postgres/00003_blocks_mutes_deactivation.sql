-- Follow settings, blocks, and deactivated accounts. Counts now count only
-- follows whose other end is an active account: a deactivated account is
-- left out of every count, and reactivating it puts it back. An end that is
-- gone (deleted in this statement, through the cascade) counts as active,
-- as on SQLite, so its followers' counts come down.

-- +goose Up
ALTER TABLE "Follows" ADD "Muted" boolean NOT NULL DEFAULT FALSE;
ALTER TABLE "Follows" ADD "NotificationsEnabled" boolean NOT NULL DEFAULT TRUE;
ALTER TABLE "Users" ADD "DeactivatedAt" timestamp with time zone NULL;

CREATE TABLE "Blocks" (
    "BlockerId" integer NOT NULL,
    "BlockedId" integer NOT NULL,
    "CreatedAt" timestamp with time zone NOT NULL DEFAULT (clock_timestamp()),
    CONSTRAINT "PK_Blocks" PRIMARY KEY ("BlockerId", "BlockedId"),
    CONSTRAINT "CK_Blocks_NoSelfBlock" CHECK ("BlockerId" <> "BlockedId"),
    CONSTRAINT "FK_Blocks_Users_BlockedId" FOREIGN KEY ("BlockedId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_Blocks_Users_BlockerId" FOREIGN KEY ("BlockerId") REFERENCES "Users" ("Id")
);
CREATE INDEX "IX_Blocks_BlockedId" ON "Blocks" ("BlockedId");

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION "TR_Follows_Counts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = OLD."FollowerId" AND "DeactivatedAt" IS NOT NULL);
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = OLD."FolloweeId" AND "DeactivatedAt" IS NOT NULL);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = NEW."FollowerId" AND "DeactivatedAt" IS NOT NULL);
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = NEW."FolloweeId" AND "DeactivatedAt" IS NOT NULL);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION "TR_Follows_Counts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId";
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId";
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId";
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TABLE "Blocks";
ALTER TABLE "Users" DROP COLUMN "DeactivatedAt";
ALTER TABLE "Follows" DROP COLUMN "NotificationsEnabled";
ALTER TABLE "Follows" DROP COLUMN "Muted";
