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
-- Counts: the FolloweeId cascade deletes the user's follows after its row,
-- so the count trigger finds the user gone, counts it as active, and takes
-- one from each follower's FollowingCount. A deactivated user was never
-- counted there, so for one the trigger first adds that one back. It
-- changes only the followers' rows: a BEFORE trigger that changes the row
-- being deleted makes PostgreSQL refuse the delete.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION "TR_Users_Delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM "Blocks" WHERE "BlockerId" = OLD."Id" OR "BlockedId" = OLD."Id";
    IF OLD."DeactivatedAt" IS NOT NULL THEN
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1
        WHERE "Id" IN (SELECT "FollowerId" FROM "Follows" WHERE "FolloweeId" = OLD."Id");
    END IF;
    RETURN OLD;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER "TR_Users_Delete" BEFORE DELETE ON "Users"
    FOR EACH ROW EXECUTE FUNCTION "TR_Users_Delete"();

-- +goose Down
DROP TRIGGER "TR_Users_Delete" ON "Users";
DROP FUNCTION "TR_Users_Delete"();
