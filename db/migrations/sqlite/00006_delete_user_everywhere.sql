-- Deleting a user takes its blocks with it and keeps the counts exact,
-- whoever deletes it: an EF Core app's Remove (the FolloweeId cascade), or
-- its "delete the follows, then the user", not only this server.
--
-- Blocks: FK_Blocks_Users_BlockerId stays NO ACTION, as on SQL Server,
-- which refuses a second cascade path (error 1785); this trigger removes
-- the user's blocks in both directions before the row goes, so no block
-- stops the delete. The same design on every dialect: one behaviour, and
-- the foreign keys an EF Core model declares are the same everywhere.
--
-- Counts: the follows that the FolloweeId cascade removes are deleted after
-- the user's row, so the count trigger cannot see whether the user was
-- deactivated and takes one from each follower's FollowingCount. A
-- deactivated user was never counted there, so for one the trigger first
-- adds that one back. (It changes only the followers' rows: SQLite leaves
-- undefined what a BEFORE trigger's change to the row being deleted does.)

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER "TR_Users_Delete" BEFORE DELETE ON "Users" BEGIN
    DELETE FROM "Blocks" WHERE "BlockerId" = OLD."Id" OR "BlockedId" = OLD."Id";
    UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1
    WHERE OLD."DeactivatedAt" IS NOT NULL
      AND "Id" IN (SELECT "FollowerId" FROM "Follows" WHERE "FolloweeId" = OLD."Id");
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Users_Delete";
