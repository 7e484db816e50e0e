-- Suggestions no longer keep users' follow lists in the process: read
-- within a budget, each followee's whole list as one range of a covering
-- index, a call costs about what one that found its lists in memory did,
-- and under many different viewers most lists were not in memory anyway
-- (docs/decisions/suggestions-budget.md). The versions that told a held
-- list from a changed one go, with the triggers that bumped them on every
-- follow and unfollow, whoever wrote. Down puts them back as migrations 9
-- and 10 left them, every version starting again from 0 (no server that
-- runs this migration holds a list).

-- +goose Up
DROP TRIGGER "TR_Follows_Update_Version";
DROP TRIGGER "TR_Follows_Delete_Version";
DROP TRIGGER "TR_Follows_Insert_Version";
DROP TABLE "FollowVersions";

-- +goose Down
CREATE TABLE "FollowVersions" (
    "UserId" INTEGER NOT NULL CONSTRAINT "PK_FollowVersions" PRIMARY KEY,
    "Version" INTEGER NOT NULL
);

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Insert_Version" AFTER INSERT ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (NEW."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Delete_Version" AFTER DELETE ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Version" AFTER UPDATE OF "FollowerId", "FolloweeId", "CreatedAt" ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (NEW."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd
