-- Follower and following counts kept on Users, so reading them costs the
-- same for an account with millions of followers as for one with none.
-- One set-based trigger keeps them for every writer, cascaded deletes
-- included.

-- +goose Up
-- One column a statement, so that adopting an EF Core database can skip a
-- column its model added already.
ALTER TABLE [Users] ADD [FollowerCount] int NOT NULL CONSTRAINT [DF_Users_FollowerCount] DEFAULT 0;
ALTER TABLE [Users] ADD [FollowingCount] int NOT NULL CONSTRAINT [DF_Users_FollowingCount] DEFAULT 0;

-- +goose StatementBegin
UPDATE [Users] SET
    [FollowerCount] = (SELECT COUNT(*) FROM [Follows] WHERE [FolloweeId] = [Users].[Id]),
    [FollowingCount] = (SELECT COUNT(*) FROM [Follows] WHERE [FollowerId] = [Users].[Id]);
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
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

-- +goose Down
DROP TRIGGER [TR_Follows_Counts];
ALTER TABLE [Users] DROP CONSTRAINT [DF_Users_FollowingCount], [DF_Users_FollowerCount];
ALTER TABLE [Users] DROP COLUMN [FollowingCount], [FollowerCount];
