-- Follow settings, blocks, and deactivated accounts. Counts now count only
-- follows whose other end is an active account: a deactivated account is
-- left out of every count, and reactivating it puts it back.

-- +goose Up
ALTER TABLE "Follows" ADD COLUMN "Muted" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "Follows" ADD COLUMN "NotificationsEnabled" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "Users" ADD COLUMN "DeactivatedAt" TEXT NULL;

CREATE TABLE "Blocks" (
    "BlockerId" INTEGER NOT NULL,
    "BlockedId" INTEGER NOT NULL,
    "CreatedAt" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '0000'),
    CONSTRAINT "PK_Blocks" PRIMARY KEY ("BlockerId", "BlockedId"),
    CONSTRAINT "CK_Blocks_NoSelfBlock" CHECK (BlockerId <> BlockedId),
    CONSTRAINT "FK_Blocks_Users_BlockedId" FOREIGN KEY ("BlockedId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    CONSTRAINT "FK_Blocks_Users_BlockerId" FOREIGN KEY ("BlockerId") REFERENCES "Users" ("Id")
);
CREATE INDEX "IX_Blocks_BlockedId" ON "Blocks" ("BlockedId");

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

-- +goose Down
-- Migration 2's count triggers come back before the column goes: the ones
-- above read "DeactivatedAt", which SQLite, once the column is gone, reads
-- as a string literal, so no follow would count.
DROP TRIGGER "TR_Follows_Insert_Counts";
DROP TRIGGER "TR_Follows_Delete_Counts";
DROP TRIGGER "TR_Follows_Update_Counts";

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Insert_Counts" AFTER INSERT ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId";
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId";
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Delete_Counts" AFTER DELETE ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId";
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId";
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Counts" AFTER UPDATE OF "FollowerId", "FolloweeId" ON "Follows" BEGIN
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId";
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId";
    UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId";
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId";
END;
-- +goose StatementEnd

DROP TABLE "Blocks";
ALTER TABLE "Users" DROP COLUMN "DeactivatedAt";
ALTER TABLE "Follows" DROP COLUMN "NotificationsEnabled";
ALTER TABLE "Follows" DROP COLUMN "Muted";
