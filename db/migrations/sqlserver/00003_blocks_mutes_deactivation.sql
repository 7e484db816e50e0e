-- Follow settings, blocks, and deactivated accounts. Counts now count only
-- follows whose other end is an active account.

-- +goose Up
-- One column a statement, so that adopting an EF Core database can skip a
-- setting its model added already.
ALTER TABLE [Follows] ADD [Muted] bit NOT NULL CONSTRAINT [DF_Follows_Muted] DEFAULT CAST(0 AS bit);
ALTER TABLE [Follows] ADD [NotificationsEnabled] bit NOT NULL CONSTRAINT [DF_Follows_NotificationsEnabled] DEFAULT CAST(1 AS bit);

ALTER TABLE [Users] ADD [DeactivatedAt] datetime2 NULL;

CREATE TABLE [Blocks] (
    [BlockerId] int NOT NULL,
    [BlockedId] int NOT NULL,
    [CreatedAt] datetime2 NOT NULL DEFAULT (SYSUTCDATETIME()),
    CONSTRAINT [PK_Blocks] PRIMARY KEY ([BlockerId], [BlockedId]),
    CONSTRAINT [CK_Blocks_NoSelfBlock] CHECK (BlockerId <> BlockedId),
    CONSTRAINT [FK_Blocks_Users_BlockedId] FOREIGN KEY ([BlockedId]) REFERENCES [Users] ([Id]) ON DELETE CASCADE,
    CONSTRAINT [FK_Blocks_Users_BlockerId] FOREIGN KEY ([BlockerId]) REFERENCES [Users] ([Id])
);

CREATE INDEX [IX_Blocks_BlockedId] ON [Blocks] ([BlockedId]);

-- +goose StatementBegin
ALTER TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    UPDATE u SET [FollowerCount] = u.[FollowerCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT x.Id, SUM(x.n) AS n FROM (
            SELECT i.[FolloweeId] AS Id, 1 AS n FROM inserted AS i
              JOIN [Users] AS o ON o.[Id] = i.[FollowerId] WHERE o.[DeactivatedAt] IS NULL
            UNION ALL SELECT d.[FolloweeId], -1 FROM deleted AS d
              JOIN [Users] AS o ON o.[Id] = d.[FollowerId] WHERE o.[DeactivatedAt] IS NULL) AS x
          GROUP BY x.Id) AS c ON c.Id = u.[Id];
    UPDATE u SET [FollowingCount] = u.[FollowingCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT x.Id, SUM(x.n) AS n FROM (
            SELECT i.[FollowerId] AS Id, 1 AS n FROM inserted AS i
              JOIN [Users] AS o ON o.[Id] = i.[FolloweeId] WHERE o.[DeactivatedAt] IS NULL
            UNION ALL SELECT d.[FollowerId], -1 FROM deleted AS d
              JOIN [Users] AS o ON o.[Id] = d.[FolloweeId] WHERE o.[DeactivatedAt] IS NULL) AS x
          GROUP BY x.Id) AS c ON c.Id = u.[Id];
END;
-- +goose StatementEnd

-- +goose Down
-- The count trigger goes back to migration 2's body first: the body above
-- reads Users.DeactivatedAt, and a trigger left reading a dropped column
-- fails every later write to Follows (Msg 207, invalid column name), as
-- PostgreSQL's Down also restores its earlier function first.
-- +goose StatementBegin
ALTER TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    UPDATE u SET [FollowerCount] = u.[FollowerCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT Id, SUM(n) AS n FROM (
            SELECT [FolloweeId] AS Id, 1 AS n FROM inserted
            UNION ALL SELECT [FolloweeId], -1 FROM deleted) AS x
          GROUP BY Id) AS c ON c.Id = u.[Id];
    UPDATE u SET [FollowingCount] = u.[FollowingCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT Id, SUM(n) AS n FROM (
            SELECT [FollowerId] AS Id, 1 AS n FROM inserted
            UNION ALL SELECT [FollowerId], -1 FROM deleted) AS x
          GROUP BY Id) AS c ON c.Id = u.[Id];
END;
-- +goose StatementEnd
DROP TABLE [Blocks];
ALTER TABLE [Users] DROP COLUMN [DeactivatedAt];
ALTER TABLE [Follows] DROP CONSTRAINT [DF_Follows_Muted], [DF_Follows_NotificationsEnabled];
ALTER TABLE [Follows] DROP COLUMN [Muted], [NotificationsEnabled];
