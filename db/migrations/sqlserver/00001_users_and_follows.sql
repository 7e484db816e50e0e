-- The tables, constraint and index names are the ones EF Core creates for the
-- same model, so an EF Core app and this server can share one database.

-- +goose Up
CREATE TABLE [Users] (
    [Id] int NOT NULL IDENTITY,
    [Name] nvarchar(450) NOT NULL,
    CONSTRAINT [PK_Users] PRIMARY KEY ([Id])
);

-- Handles are unique; the default collation compares them without regard to case.
CREATE UNIQUE INDEX [IX_Users_Name] ON [Users] ([Name]);

-- Only one cascade path: a second cascading foreign key would make SQL Server
-- reject the table (error 1785), so deleting a user deletes its follow rows
-- in both directions itself.
CREATE TABLE [Follows] (
    [FollowerId] int NOT NULL,
    [FolloweeId] int NOT NULL,
    [CreatedAt] datetime2 NOT NULL DEFAULT (SYSUTCDATETIME()),
    CONSTRAINT [PK_Follows] PRIMARY KEY ([FollowerId], [FolloweeId]),
    CONSTRAINT [CK_Follows_NoSelfFollow] CHECK (FollowerId <> FolloweeId),
    CONSTRAINT [FK_Follows_Users_FolloweeId] FOREIGN KEY ([FolloweeId]) REFERENCES [Users] ([Id]) ON DELETE CASCADE,
    CONSTRAINT [FK_Follows_Users_FollowerId] FOREIGN KEY ([FollowerId]) REFERENCES [Users] ([Id])
);

-- Keyset pages, newest first: "who follows X" and "whom does X follow".
CREATE INDEX [IX_Follows_FolloweeId_CreatedAt_FollowerId] ON [Follows] ([FolloweeId], [CreatedAt], [FollowerId]);
CREATE INDEX [IX_Follows_FollowerId_CreatedAt_FolloweeId] ON [Follows] ([FollowerId], [CreatedAt], [FolloweeId]);

-- +goose Down
DROP TABLE [Follows];
DROP TABLE [Users];
