-- The tables, constraint and index names are the ones EF Core creates for the
-- same model, so an EF Core app and this server can share one database.

-- +goose Up
CREATE TABLE "Users" (
    "Id" INTEGER NOT NULL CONSTRAINT "PK_Users" PRIMARY KEY AUTOINCREMENT,
    "Name" TEXT NOT NULL
);
-- Handles are unique without regard to ASCII case, as they are under SQL
-- Server's default collation.
CREATE UNIQUE INDEX "IX_Users_Name" ON "Users" ("Name" COLLATE NOCASE);

CREATE TABLE "Follows" (
    "FollowerId" INTEGER NOT NULL,
    "FolloweeId" INTEGER NOT NULL,
    -- EF Core's TEXT form of a DateTime, padded to seven fractional digits so
    -- that text order is time order.
    "CreatedAt" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '0000'),
    CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId"),
    CONSTRAINT "CK_Follows_NoSelfFollow" CHECK (FollowerId <> FolloweeId),
    CONSTRAINT "FK_Follows_Users_FolloweeId" FOREIGN KEY ("FolloweeId") REFERENCES "Users" ("Id") ON DELETE CASCADE,
    -- Deliberately NO ACTION: SQL Server refuses a second cascade path (error
    -- 1785), and both dialects must behave the same.
    CONSTRAINT "FK_Follows_Users_FollowerId" FOREIGN KEY ("FollowerId") REFERENCES "Users" ("Id")
);

-- Keyset pages, newest first: "who follows X" and "whom does X follow".
CREATE INDEX "IX_Follows_FolloweeId_CreatedAt_FollowerId" ON "Follows" ("FolloweeId", "CreatedAt", "FollowerId");
CREATE INDEX "IX_Follows_FollowerId_CreatedAt_FolloweeId" ON "Follows" ("FollowerId", "CreatedAt", "FolloweeId");

-- +goose Down
DROP TABLE "Follows";
DROP TABLE "Users";
