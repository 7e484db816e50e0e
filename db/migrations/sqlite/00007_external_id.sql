-- The subject that an OpenID Connect provider names an account by (its
-- "sub" claim, or the claim -oidc-user-claim names), for accounts that
-- sign in through the provider; NULL for the others. Unique where set, so
-- that one subject is one account even when replicas provision it at
-- once: the loser of that race finds the winner's row (see
-- db.Store.ExternalUser). The index is named as EF Core names one.

-- +goose Up
ALTER TABLE "Users" ADD COLUMN "ExternalId" TEXT NULL;
CREATE UNIQUE INDEX "IX_Users_ExternalId" ON "Users" ("ExternalId") WHERE "ExternalId" IS NOT NULL;

-- +goose Down
DROP INDEX "IX_Users_ExternalId";
ALTER TABLE "Users" DROP COLUMN "ExternalId";
