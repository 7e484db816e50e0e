-- Deleting a user takes its blocks with it and keeps the counts exact,
-- whoever deletes it: an EF Core app's Remove (the FolloweeId cascade), or
-- its "delete the follows, then the user", not only this server.
--
-- Blocks: a second cascading foreign key from Blocks to Users is refused
-- (error 1785), so FK_Blocks_Users_BlockerId stays NO ACTION and an INSTEAD
-- OF DELETE trigger on Users removes the blocks of the users being deleted,
-- in both directions, then the follows the FolloweeId cascade would remove,
-- then the users. Deleting those follows while the users' rows are still
-- there lets the count trigger see whether each was deactivated. The
-- FollowerId foreign key still refuses a user who follows someone, as on
-- the other dialects. An EF Core model must declare the trigger
-- (HasTrigger): SQL Server refuses OUTPUT without INTO (error 334) on a
-- table with an enabled trigger for the statement's own action ("OUTPUT
-- clause": "the target of the DML operation can't have any enabled
-- trigger defined on it for the given DML action"), so EF Core's DELETE
-- from Users would fail; an INSERT into Users, which has no INSERT
-- trigger, may still use OUTPUT.
--
-- (Migration 11 rewrites TR_Users_Delete with NOCOUNT ON throughout: the
-- NOCOUNT OFF below made drivers count each deleted user twice, and never
-- changed @@ROWCOUNT.)
--
-- The count trigger no longer needs the other end's row: a follow counts
-- unless its other end is there and deactivated, so a cascade that deleted
-- that end first still brings the counts down (as on SQLite and
-- PostgreSQL). It reads whether that end is deactivated WITH (UPDLOCK): a
-- locking read of the latest committed row, where READ_COMMITTED_SNAPSHOT
-- (Azure SQL's default) would otherwise give the row's last committed
-- version without waiting, and one that queues behind the server's
-- deactivation, which holds UPDLOCK on the account and the users around it
-- from before it sets DeactivatedAt until its recount commits (a shared
-- lock, as READCOMMITTEDLOCK takes, would not wait for it). Otherwise a
-- follow racing a deactivation is counted against the recount the
-- deactivation makes, and the count stays one too high. The lock costs no
-- concurrency: the trigger's UPDATEs lock both ends' rows to the commit
-- anyway. The counts themselves are updated in place (count + n), which
-- takes the row's update lock and adds to its current value under either
-- isolation.

-- +goose Up
-- +goose StatementBegin
ALTER TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    UPDATE u SET [FollowerCount] = u.[FollowerCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT x.Id, SUM(x.n) AS n FROM (
            SELECT i.[FolloweeId] AS Id, 1 AS n FROM inserted AS i
              WHERE NOT EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                WHERE o.[Id] = i.[FollowerId] AND o.[DeactivatedAt] IS NOT NULL)
            UNION ALL SELECT d.[FolloweeId], -1 FROM deleted AS d
              WHERE NOT EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                WHERE o.[Id] = d.[FollowerId] AND o.[DeactivatedAt] IS NOT NULL)) AS x
          GROUP BY x.Id) AS c ON c.Id = u.[Id];
    UPDATE u SET [FollowingCount] = u.[FollowingCount] + c.n
    FROM [Users] AS u
    JOIN (SELECT x.Id, SUM(x.n) AS n FROM (
            SELECT i.[FollowerId] AS Id, 1 AS n FROM inserted AS i
              WHERE NOT EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                WHERE o.[Id] = i.[FolloweeId] AND o.[DeactivatedAt] IS NOT NULL)
            UNION ALL SELECT d.[FollowerId], -1 FROM deleted AS d
              WHERE NOT EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                WHERE o.[Id] = d.[FolloweeId] AND o.[DeactivatedAt] IS NOT NULL)) AS x
          GROUP BY x.Id) AS c ON c.Id = u.[Id];
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER [TR_Users_Delete] ON [Users] INSTEAD OF DELETE AS
BEGIN
    SET NOCOUNT ON;
    DELETE b FROM [Blocks] AS b
    WHERE b.[BlockerId] IN (SELECT [Id] FROM deleted) OR b.[BlockedId] IN (SELECT [Id] FROM deleted);
    DELETE f FROM [Follows] AS f WHERE f.[FolloweeId] IN (SELECT [Id] FROM deleted);
    -- Last, and counted: @@ROWCOUNT after the caller's DELETE (what EF
    -- Core reads with HasTrigger) is then the number of users deleted,
    -- and so are the rows affected a driver adds up from the counts the
    -- server sends (go-mssqldb does; the server's DeleteUser checks them),
    -- whatever SQL Server reports for the statement the trigger replaced.
    SET NOCOUNT OFF;
    DELETE u FROM [Users] AS u WHERE u.[Id] IN (SELECT [Id] FROM deleted);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER [TR_Users_Delete];
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
