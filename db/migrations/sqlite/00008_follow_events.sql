-- The outbox of live follow events (see db/events.go): each follow and
-- unfollow adds its row in the same transaction as the change, and the
-- subscriptions deliver from here in Id order. No foreign keys to Users:
-- deleting an account must not cascade the history away (delivery
-- checks that the users exist and are active). AUTOINCREMENT keeps an Id
-- from ever being given out twice, even after pruning removes the
-- newest rows, so a cursor never points before a later event.

-- +goose Up
CREATE TABLE "FollowEvents" (
    "Id" INTEGER NOT NULL CONSTRAINT "PK_FollowEvents" PRIMARY KEY AUTOINCREMENT,
    "Kind" INTEGER NOT NULL,
    "FollowerId" INTEGER NOT NULL,
    "FolloweeId" INTEGER NOT NULL,
    "At" TEXT NOT NULL
);
CREATE INDEX "IX_FollowEvents_At" ON "FollowEvents" ("At");

-- +goose Down
DROP TABLE "FollowEvents";
