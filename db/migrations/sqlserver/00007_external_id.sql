-- The subject that an OpenID Connect provider names an account by (its
-- "sub" claim, or the claim -oidc-user-claim names), for accounts that
-- sign in through the provider; NULL for the others. Unique where set (a
-- filtered index, as EF Core makes for a nullable unique column), so that
-- one subject is one account even when replicas provision it at once: the
-- loser of that race finds the winner's row (see db.Store.ExternalUser).
-- A binary collation, because subjects differing only in case are
-- different subjects; nvarchar(450) is EF Core's width for an indexed
-- string and holds any subject (OpenID Connect caps them at 255).

-- +goose Up
ALTER TABLE [Users] ADD [ExternalId] nvarchar(450) COLLATE Latin1_General_100_BIN2 NULL;
CREATE UNIQUE INDEX [IX_Users_ExternalId] ON [Users] ([ExternalId]) WHERE [ExternalId] IS NOT NULL;

-- +goose Down
DROP INDEX [IX_Users_ExternalId] ON [Users];
ALTER TABLE [Users] DROP COLUMN [ExternalId];
