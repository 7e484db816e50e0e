-- Follower and following counts kept on Users, so reading them costs the
-- same for an account with millions of followers as for one with none.
-- A trigger keeps them, so every writer (this server, an EF Core app, a
-- DBA's script) keeps them right in its own transaction. The UPDATE takes
-- the user's row lock and adds to the committed value, so concurrent
-- follows at READ COMMITTED never lose a count.

-- +goose Up
ALTER TABLE "Users" ADD "FollowerCount" integer NOT NULL DEFAULT 0;
ALTER TABLE "Users" ADD "FollowingCount" integer NOT NULL DEFAULT 0;

UPDATE "Users" SET
    "FollowerCount" = (SELECT COUNT(*) FROM "Follows" WHERE "FolloweeId" = "Users"."Id"),
    "FollowingCount" = (SELECT COUNT(*) FROM "Follows" WHERE "FollowerId" = "Users"."Id");

-- +goose StatementBegin
CREATE FUNCTION "TR_Follows_Counts"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" - 1 WHERE "Id" = OLD."FolloweeId";
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" - 1 WHERE "Id" = OLD."FollowerId";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE "Users" SET "FollowerCount" = "FollowerCount" + 1 WHERE "Id" = NEW."FolloweeId";
        UPDATE "Users" SET "FollowingCount" = "FollowingCount" + 1 WHERE "Id" = NEW."FollowerId";
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER "TR_Follows_Counts" AFTER INSERT OR DELETE OR UPDATE OF "FollowerId", "FolloweeId" ON "Follows"
    FOR EACH ROW EXECUTE FUNCTION "TR_Follows_Counts"();

-- +goose Down
DROP TRIGGER "TR_Follows_Counts" ON "Follows";
DROP FUNCTION "TR_Follows_Counts"();
ALTER TABLE "Users" DROP COLUMN "FollowingCount";
ALTER TABLE "Users" DROP COLUMN "FollowerCount";
