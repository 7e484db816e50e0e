-- A random stamp on every account, which each bearer token carries and
-- which dies with the account: a token no longer names whoever holds its
-- user id, but the one account that held it when it was minted (ASP.NET
-- Identity's SecurityStamp, under its name). The default gives every row,
-- existing ones included and whoever the writer, 32 random hex digits.
-- (Version 4 is SQLite's alone.)

-- +goose Up
ALTER TABLE [Users] ADD [SecurityStamp] nvarchar(32) NOT NULL
    CONSTRAINT [DF_Users_SecurityStamp] DEFAULT (LOWER(REPLACE(CONVERT(nvarchar(36), NEWID()), '-', '')));

-- +goose Down
ALTER TABLE [Users] DROP CONSTRAINT [DF_Users_SecurityStamp];
ALTER TABLE [Users] DROP COLUMN [SecurityStamp];
