-- The outbox of live follow events (see db/events.go): each follow and
-- unfollow adds its row in the same transaction as the change, and the
-- subscriptions deliver from here in Id order. No foreign keys to Users:
-- deleting an account must not cascade the history away (delivery
-- checks that the users exist and are active).

-- +goose Up
CREATE TABLE "FollowEvents" (
    "Id" bigint GENERATED ALWAYS AS IDENTITY,
    "Kind" smallint NOT NULL,
    "FollowerId" integer NOT NULL,
    "FolloweeId" integer NOT NULL,
    "At" timestamp with time zone NOT NULL,
    CONSTRAINT "PK_FollowEvents" PRIMARY KEY ("Id")
);
CREATE INDEX "IX_FollowEvents_At" ON "FollowEvents" ("At");

-- +goose Down
DROP TABLE "FollowEvents";
