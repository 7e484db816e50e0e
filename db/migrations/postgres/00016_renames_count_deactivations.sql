-- UserRenames counts deactivations too: the server holds the names of
-- the active users it ranks among suggestions (db/suggestions.go), each
-- at the count it was read at, and a name held at the count a call reads
-- is then that of a user still active, with that name. A suggestions
-- query that shows only ids and names (as the article's does) then reads
-- no user's row when it holds every name, one statement fewer per call
-- (docs/decisions/following-versions.md). A deletion needs no count: the
-- cascade deletes the user's follows, which moves every list it was in.
-- Reactivation needs none either: no name is held of a deactivated user.

-- +goose Up
DROP TRIGGER "TR_Users_Rename" ON "Users";

CREATE TRIGGER "TR_Users_Rename" AFTER UPDATE OF "Name", "DeactivatedAt" ON "Users"
    FOR EACH ROW WHEN (OLD."Name" IS DISTINCT FROM NEW."Name" OR (OLD."DeactivatedAt" IS NULL AND NEW."DeactivatedAt" IS NOT NULL))
    EXECUTE FUNCTION "TR_Users_Rename"();

-- +goose Down
DROP TRIGGER "TR_Users_Rename" ON "Users";

CREATE TRIGGER "TR_Users_Rename" AFTER UPDATE OF "Name" ON "Users"
    FOR EACH ROW WHEN (OLD."Name" IS DISTINCT FROM NEW."Name") EXECUTE FUNCTION "TR_Users_Rename"();
