-- The outbox of live follow events (see db/events.go): each follow and
-- unfollow adds its row in the same transaction as the change, and the
-- subscriptions deliver from here in Id order. No foreign keys to Users:
-- deleting an account must not cascade the history away (delivery
-- checks that the users exist and are active).

-- +goose Up
CREATE TABLE [FollowEvents] (
    [Id] bigint NOT NULL IDENTITY(1, 1),
    [Kind] smallint NOT NULL,
    [FollowerId] int NOT NULL,
    [FolloweeId] int NOT NULL,
    [At] datetime2 NOT NULL,
    CONSTRAINT [PK_FollowEvents] PRIMARY KEY ([Id])
);
CREATE INDEX [IX_FollowEvents_At] ON [FollowEvents] ([At]);

-- +goose Down
DROP TABLE [FollowEvents];
