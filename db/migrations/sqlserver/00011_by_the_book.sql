-- What SQL Server's documented rules ask of the schema, for databases made
-- by the earlier migrations or adopted from EF Core. Every part can run
-- again on a database that has it already (adoption replays it on a
-- database whose Name it may have altered itself), and each stays inside
-- goose's transaction for the migration.
--
-- The triggers and the filtered index IX_Users_ExternalId need
-- QUOTED_IDENTIFIER ON where they are created and where rows change.
-- go-mssqldb logs in with the fODBC flag set (its login's OptionFlags2;
-- MS-TDS LOGIN7: "Set if the client is the ODBC driver. This causes the
-- server to set ANSI_DEFAULTS to ON", which turns QUOTED_IDENTIFIER and
-- ANSI_NULLS on), so every statement here, and every one the server runs,
-- has it: the name check below calls an XML method (.value), which needs
-- it too ("SET QUOTED_IDENTIFIER must be ON when you invoke XML data type
-- methods"). A trigger keeps the setting of the batch that created or
-- altered it (SET QUOTED_IDENTIFIER, of stored procedures: "Static
-- Transact-SQL in a stored procedure is parsed using the QUOTED_IDENTIFIER
-- setting in effect for the batch that created or altered" it), so the
-- two ALTER TRIGGERs below also mend triggers a hand-run script made
-- under OFF. A script run by hand must say SET QUOTED_IDENTIFIER ON
-- itself, and so must any client whose driver does not (not checked here
-- for SqlClient, whose sessions EF Core's writes run on).

-- +goose Up
-- Names compare case-insensitively whatever the database's default
-- collation: under a case-sensitive or binary one IX_Users_Name would take
-- both "Alice" and "alice", which SQLite (NOCASE) and PostgreSQL (lower())
-- refuse. Nothing changes before the check: names that would collide under
-- the new collation end the migration (THROW, error 50000) with the names
-- in the message (a % doubled: THROW: "% is a reserved character in the
-- message text of a THROW statement and must be escaped"). The column's
-- statistics go first ("Set or Change the Column Collation": a column's
-- collation cannot change while an index or distribution statistics,
-- "either generated automatically or by the CREATE STATISTICS statement",
-- refer to it), then the index, which is made again on the altered column.
-- A column with this collation already (a database made after this
-- migration, or one adoption altered) is left as it is.
-- +goose StatementBegin
IF EXISTS (SELECT 1 FROM sys.columns AS c
           WHERE c.object_id = OBJECT_ID(N'[Users]') AND c.name = N'Name'
             AND (c.collation_name IS NULL OR c.collation_name <> N'Latin1_General_100_CI_AS'))
BEGIN
    DECLARE @taken nvarchar(max) = STUFF((
        SELECT TOP (20) N', ' + x.[Name]
        FROM (SELECT k.[Name], COUNT(*) OVER (PARTITION BY k.[Folded]) AS [Same]
              FROM (SELECT u.[Name], u.[Name] COLLATE Latin1_General_100_CI_AS AS [Folded]
                    FROM [Users] AS u) AS k) AS x
        WHERE x.[Same] > 1
        ORDER BY x.[Name] COLLATE Latin1_General_100_CI_AS, x.[Name]
        FOR XML PATH(''), TYPE).value('.', 'nvarchar(max)'), 1, 2, N'');
    IF @taken IS NOT NULL
    BEGIN
        DECLARE @message nvarchar(2048) = LEFT(N'Users.Name: these names differ only in case and cannot stay apart under Latin1_General_100_CI_AS; rename all but one of each, then start again: ' + REPLACE(@taken, N'%', N'%%'), 2048);
        THROW 50000, @message, 1;
    END;
    DECLARE @dropStatistics nvarchar(max) = (
        SELECT N'DROP STATISTICS [Users].' + QUOTENAME(s.name) + N'; '
        FROM sys.stats AS s
        JOIN sys.stats_columns AS sc ON sc.object_id = s.object_id AND sc.stats_id = s.stats_id
        JOIN sys.columns AS c ON c.object_id = sc.object_id AND c.column_id = sc.column_id
        WHERE s.object_id = OBJECT_ID(N'[Users]') AND c.name = N'Name'
          AND (s.auto_created = 1 OR s.user_created = 1)
        FOR XML PATH(''), TYPE).value('.', 'nvarchar(max)');
    IF @dropStatistics IS NOT NULL
        EXEC sys.sp_executesql @dropStatistics;
    DROP INDEX IF EXISTS [IX_Users_Name] ON [Users];
    ALTER TABLE [Users] ALTER COLUMN [Name] nvarchar(450) COLLATE Latin1_General_100_CI_AS NOT NULL;
    CREATE UNIQUE INDEX [IX_Users_Name] ON [Users] ([Name]);
END;
-- +goose StatementEnd

-- Deleting users reports one row a user, to every caller. The trigger's
-- own statements send no count (SET NOCOUNT: "SET NOCOUNT ON prevents the
-- sending of DONEINPROC messages to the client for each statement"; a SET
-- in a trigger lasts until the trigger returns, CREATE TRIGGER). What a
-- driver adds up is then the replaced DELETE's own count, the rows it
-- named, the rows in deleted: go-mssqldb sums every DONE and DONEINPROC
-- count, and SqlClient (so EF Core's ExecuteDelete) likewise
-- (SqlCommand.ExecuteNonQuery: "When SET NOCOUNT ON is set ... as part of
-- a trigger initiated by the execution of the command, the rows affected
-- by individual statements stop contributing to the count"). That an
-- INSTEAD OF trigger's statement reports its rows whatever the trigger
-- does with them no Microsoft page says in so many words; the live test
-- holds it. NOCOUNT never touched @@ROWCOUNT ("The @@ROWCOUNT function is
-- updated even when SET NOCOUNT is ON"), which EF Core's SaveChanges
-- reads after its DELETE with HasTrigger. Before, the last DELETE ran
-- under NOCOUNT OFF: every deleted user was counted twice, and
-- ExecuteDelete returned 2N.
-- +goose StatementBegin
ALTER TRIGGER [TR_Users_Delete] ON [Users] INSTEAD OF DELETE AS
BEGIN
    SET NOCOUNT ON;
    DELETE b FROM [Blocks] AS b
    WHERE b.[BlockerId] IN (SELECT [Id] FROM deleted) OR b.[BlockedId] IN (SELECT [Id] FROM deleted);
    DELETE f FROM [Follows] AS f WHERE f.[FolloweeId] IN (SELECT [Id] FROM deleted);
    DELETE u FROM [Users] AS u WHERE u.[Id] IN (SELECT [Id] FROM deleted);
END;
-- +goose StatementEnd

-- The counts change only when a follow comes or goes or changes an end:
-- an UPDATE of Muted or NotificationsEnabled returns before it locks
-- either user (T-SQL has no UPDATE OF; SQLite's and PostgreSQL's triggers
-- fire only for UPDATE OF FollowerId, FolloweeId). UPDATE(column) is
-- asked only of an UPDATE, one with rows in both inserted and deleted:
-- the documentation says it is TRUE for every column in an INSERT ("IF
-- UPDATE returns the TRUE value in INSERT actions") and says nothing of a
-- DELETE, so an INSERT (deleted empty) or a DELETE (inserted empty) never
-- reaches it and always counts. An UPDATE that affects no rows has both
-- empty and finds nothing to count either way.
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

-- Deleting or deactivating an account locks the row of everyone around
-- it, and the count trigger updates each of those rows: one statement
-- taking a lock a row. "Lock escalation is triggered when lock escalation
-- isn't disabled on the table by using the ALTER TABLE SET LOCK_ESCALATION
-- option" and a single statement acquires at least 5,000 locks on one
-- table or index (or the instance runs short of lock memory); the
-- escalated lock is on the whole of Users, and every sign-up and every
-- follow's count update waits for the commit. DISABLE keeps row locks
-- ("Prevents lock escalation in most cases"; the exception is a scan of a
-- heap under SERIALIZABLE, and Users has a clustered key). The cost is
-- lock memory for as long as the transaction runs ("Each lock consumes
-- memory (96 bytes per lock)", Server configuration: locks): some 100 MB
-- for an account around a million users. Past 60 percent of the engine's
-- memory "further requests for locks generate an error" (Msg 1204) where
-- escalation would have taken the table.
--
-- Follows keeps escalation: deleting an account with over 5,000 follow
-- rows may lock all of Follows until it commits, but disabling it there
-- would make the bulk import, which copies every follow in one
-- transaction, hold a lock for each row of each of its three indexes.
-- (The import copies every user in that transaction too, so it takes
-- Users whole first: see beforeUserIDs in db/sqlserver_import.go.)
ALTER TABLE [Users] SET (LOCK_ESCALATION = DISABLE);

-- +goose Down
-- Names keep their collation: the one before is not recorded, and the
-- case-insensitive one refuses no name the server would accept.
ALTER TABLE [Users] SET (LOCK_ESCALATION = TABLE);
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
ALTER TRIGGER [TR_Users_Delete] ON [Users] INSTEAD OF DELETE AS
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
