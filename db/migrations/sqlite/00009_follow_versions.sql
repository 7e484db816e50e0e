-- A version per user of the follows it made, which every change to them
-- bumps, whoever writes: suggestions keep each user's newest follows in
-- the process (db/suggestions.go, followLists) and read a list again
-- only when its version has moved. SQLite only: the other dialects rank
-- suggestions in SQL. No foreign key: deleting a user deletes its
-- follows, whose triggers write here, and a missing row is version 0.
-- A bulk import sets these triggers aside with the others on Follows and
-- bumps the versions of the users it touched itself.

-- +goose Up
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
CREATE TRIGGER "TR_Follows_Update_Version" AFTER UPDATE ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (NEW."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Follows_Update_Version";
DROP TRIGGER "TR_Follows_Delete_Version";
DROP TRIGGER "TR_Follows_Insert_Version";
DROP TABLE "FollowVersions";
