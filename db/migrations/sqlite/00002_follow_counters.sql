-- Follower and following counts kept on Users, so reading them costs the
-- same for an account with millions of followers as for one with none.
-- Triggers keep them, so every writer (this server, an EF Core app on the
-- same file, a DBA's script) keeps them right in its own transaction.

-- +goose Up
ALTER TABLE "Users" ADD COLUMN "FollowerCount" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "Users" ADD COLUMN "FollowingCount" INTEGER NOT NULL DEFAULT 0;

UPDATE "Users" SET
    "FollowerCount" = (SELECT COUNT(*) FROM "Follows" WHERE "FolloweeId" = "Users"."Id"),
    "FollowingCount" = (SELECT COUNT(*) FROM "Follows" WHERE "FollowerId" = "Users"."Id");

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

-- +goose Down
DROP TRIGGER "TR_Follows_Update_Counts";
DROP TRIGGER "TR_Follows_Delete_Counts";
DROP TRIGGER "TR_Follows_Insert_Counts";
ALTER TABLE "Users" DROP COLUMN "FollowingCount";
ALTER TABLE "Users" DROP COLUMN "FollowerCount";
