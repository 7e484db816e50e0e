-- A version of each user's following list: the set of users it follows.
-- The server keeps users' lists in memory for suggestions and reads a
-- list again only when its version has moved (db/followlists.go). The
-- count triggers, which already update the follower's row on every
-- insert, delete and key update of a follow, whoever writes, bump it in
-- that same UPDATE, so a write costs no extra row: migration 9 kept
-- versions in a table of their own, an extra row written by every follow
-- and unfollow (docs/decisions/suggestion-list-cache.md). A follow of a
-- deactivated user changes the list but not the count, so the version
-- goes up whatever the count does. Whatever sets FollowingCount outside
-- the triggers (the bulk import, the recounts) bumps it too.

-- +goose Up
ALTER TABLE "Users" ADD COLUMN "FollowingVersion" INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER "TR_Follows_Insert_Counts";
DROP TRIGGER "TR_Follows_Delete_Counts";
DROP TRIGGER "TR_Follows_Update_Counts";

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Insert_Counts" AFTER INSERT ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
        "FollowingCount" = "FollowingCount" + ((SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FolloweeId") IS NULL)
        WHERE "Id" = NEW."FollowerId";
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Delete_Counts" AFTER DELETE ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
        "FollowingCount" = "FollowingCount" - ((SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FolloweeId") IS NULL)
        WHERE "Id" = OLD."FollowerId";
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Counts" AFTER UPDATE OF "FollowerId", "FolloweeId" ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
        "FollowingCount" = "FollowingCount" - ((SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FolloweeId") IS NULL)
        WHERE "Id" = OLD."FollowerId";
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingVersion" = "FollowingVersion" + 1,
        "FollowingCount" = "FollowingCount" + ((SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FolloweeId") IS NULL)
        WHERE "Id" = NEW."FollowerId";
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Follows_Insert_Counts";
DROP TRIGGER "TR_Follows_Delete_Counts";
DROP TRIGGER "TR_Follows_Update_Counts";

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Insert_Counts" AFTER INSERT ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FolloweeId") IS NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Delete_Counts" AFTER DELETE ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FolloweeId") IS NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Counts" AFTER UPDATE OF "FollowerId", "FolloweeId" ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = OLD."FolloweeId") IS NULL;
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FollowerId") IS NULL;
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId"
        AND (SELECT "DeactivatedAt" FROM "Users" WHERE "Id" = NEW."FolloweeId") IS NULL;
END;
-- +goose StatementEnd

ALTER TABLE "Users" DROP COLUMN "FollowingVersion";
