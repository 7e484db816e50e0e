-- The update trigger of migration 9 bumped the follower's version on an
-- UPDATE of any column of Follows, so a mute or notifications toggle made
-- suggestions read that user's list again, though a list (a user's newest
-- follows, by CreatedAt, as FolloweeIds) holds neither. It now fires only
-- on the columns a list is made of. The trigger keeps its name: the EF
-- Core model declares it (docs/efcore), and the store checks it at open
-- against this definition (db/followlists.go).

-- +goose Up
DROP TRIGGER "TR_Follows_Update_Version";

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Version" AFTER UPDATE OF "FollowerId", "FolloweeId", "CreatedAt" ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (NEW."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Follows_Update_Version";

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_Update_Version" AFTER UPDATE ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (NEW."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END;
-- +goose StatementEnd
