-- A version per user of the set of users it follows: the server keeps
-- users' follow lists in memory and reads a list again only when its
-- FollowingVersion has moved. It goes up whenever a follow by the user
-- comes, goes or changes an end, whoever writes (this server, an EF Core
-- app, a script), and never goes down.
--
-- The count trigger keeps it, in the UPDATE that already adjusts the
-- follower's FollowingCount: a write locks and changes no row it did not
-- before, but for one case. A follow whose followee is deactivated
-- leaves FollowingCount as it is, and that UPDATE used to skip its
-- follower; it changes the follower's list all the same, so the follower's
-- row is now updated for its version (count + 0). Each follow a statement
-- inserts or deletes adds one to its follower's version (an UPDATE of an
-- end counts as both: the old row's follower and the new row's go up), so
-- the follows deleted through the FolloweeId cascade, or by
-- TR_Users_Delete, move the versions of everyone who followed the deleted
-- user, deactivated or not. An UPDATE of neither end (Muted,
-- NotificationsEnabled, CreatedAt) changes no set and moves no version:
-- the trigger returns first, as since migration 11.
--
-- The trigger keeps its name, which an EF Core model declares
-- (HasTrigger), and is altered in a batch of its own under
-- QUOTED_IDENTIFIER ON, as migration 11 says every trigger must be.
-- (Versions 9, 10 and 13 are SQLite's alone, 12 PostgreSQL's.)

-- +goose Up
-- bigint: a counter that is never reset outlives int's 2,147,483,647
-- changes. A named default, as the counts' (DF_Users_FollowingCount),
-- which the Down drops by name; adoption gives the same one to a
-- FollowingVersion an EF Core model added NOT NULL without a default.
ALTER TABLE [Users] ADD [FollowingVersion] bigint NOT NULL CONSTRAINT [DF_Users_FollowingVersion] DEFAULT 0;

-- A user who follows anyone starts at 1, so that a user with follows
-- never has version 0. A version already above 0 is left as it is (a
-- version only goes up), so the statement can run again. Users' lock
-- escalation is off (migration 11), so updating a million followers would
-- hold a row lock each (96 bytes apiece) to the commit; TABLOCKX takes
-- the table instead, as the import does (beforeUserIDs in
-- db/sqlserver_import.go). That costs no concurrency: the ALTER TABLE
-- above holds Users whole to the commit already (its schema modification
-- lock), and where adoption skips it (an EF Core model added the column),
-- the adopting transaction runs while the app's writes are stopped.
-- +goose StatementBegin
UPDATE u SET [FollowingVersion] = 1
FROM [Users] AS u WITH (TABLOCKX)
WHERE u.[FollowingVersion] = 0
  AND EXISTS (SELECT 1 FROM [Follows] AS f WHERE f.[FollowerId] = u.[Id]);
-- +goose StatementEnd

-- Migration 11's body, but for the second UPDATE: every follow of the
-- follower is in it, whatever its followee, and counts toward
-- FollowingCount only when the followee is not deactivated (the same
-- locking read as before, WITH (UPDLOCK), now in a CASE); COUNT(*) is
-- how many of the follower's follows the statement changed.
-- +goose StatementBegin
ALTER TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT 1 FROM inserted) AND EXISTS (SELECT 1 FROM deleted)
       AND NOT (UPDATE([FollowerId]) OR UPDATE([FolloweeId]))
        RETURN;
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
    UPDATE u SET [FollowingCount] = u.[FollowingCount] + c.n,
                 [FollowingVersion] = u.[FollowingVersion] + c.changed
    FROM [Users] AS u
    JOIN (SELECT x.Id, SUM(x.n) AS n, COUNT(*) AS changed FROM (
            SELECT i.[FollowerId] AS Id,
                   CASE WHEN EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                     WHERE o.[Id] = i.[FolloweeId] AND o.[DeactivatedAt] IS NOT NULL)
                        THEN 0 ELSE 1 END AS n
              FROM inserted AS i
            UNION ALL SELECT d.[FollowerId],
                   CASE WHEN EXISTS (SELECT 1 FROM [Users] AS o WITH (UPDLOCK)
                                     WHERE o.[Id] = d.[FolloweeId] AND o.[DeactivatedAt] IS NOT NULL)
                        THEN 0 ELSE -1 END
              FROM deleted AS d) AS x
          GROUP BY x.Id) AS c ON c.Id = u.[Id];
END;
-- +goose StatementEnd

-- +goose Down
-- The count trigger goes back to migration 11's body first: the body
-- above writes FollowingVersion, and a trigger left naming a dropped
-- column fails every later write to Follows (Msg 207).
-- +goose StatementBegin
ALTER TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE AS
BEGIN
    SET NOCOUNT ON;
    IF EXISTS (SELECT 1 FROM inserted) AND EXISTS (SELECT 1 FROM deleted)
       AND NOT (UPDATE([FollowerId]) OR UPDATE([FolloweeId]))
        RETURN;
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
ALTER TABLE [Users] DROP CONSTRAINT [DF_Users_FollowingVersion];
ALTER TABLE [Users] DROP COLUMN [FollowingVersion];
