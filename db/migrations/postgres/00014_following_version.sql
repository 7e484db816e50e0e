-- A version of each user's following list: the set of users it follows.
-- The server keeps users' lists in memory for suggestions and reads a
-- list again only when its version has moved (db/followlists.go). The
-- count trigger, which already updates the follower's row on every
-- insert, delete and key update of a follow, whoever writes, bumps it in
-- that same UPDATE, so a write costs no extra row. A follow of a
-- deactivated user changes the list but not the count, so the version
-- goes up whatever the count does. Whatever sets FollowingCount outside
-- the trigger (the bulk import, the recounts) bumps it too.

-- +goose Up
ALTER TABLE "Users" ADD "FollowingVersion" bigint NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION "TR_Follows_Counts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = OLD."FollowerId" AND "DeactivatedAt" IS NOT NULL);
        UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
            "FollowingCount" = "FollowingCount" - CASE WHEN EXISTS (SELECT 1 FROM "Users" WHERE "Id" = OLD."FolloweeId" AND "DeactivatedAt" IS NOT NULL) THEN 0 ELSE 1 END
            WHERE "Id" = OLD."FollowerId";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
            AND NOT EXISTS (SELECT 1 FROM "Users" WHERE "Id" = NEW."FollowerId" AND "DeactivatedAt" IS NOT NULL);
        UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
            "FollowingCount" = "FollowingCount" + CASE WHEN EXISTS (SELECT 1 FROM "Users" WHERE "Id" = NEW."FolloweeId" AND "DeactivatedAt" IS NOT NULL) THEN 0 ELSE 1 END
            WHERE "Id" = NEW."FollowerId";
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
ALTER TABLE "Users" DROP COLUMN "FollowingVersion";
