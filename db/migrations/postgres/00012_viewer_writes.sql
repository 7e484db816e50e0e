-- Where each account's last write stands in the primary's WAL, so that
-- every instance can tell whether a read replica has replayed it (read
-- your writes across instances: see db/replicas.go and docs/replicas.md).
-- Lsn is the WAL position as a number of bytes; 9223372036854775807 means
-- a write that committed but whose position is not recorded yet, which no
-- replica has replayed. Read and written on the primary only, and only
-- when the server is given replicas. No foreign key to Users: a row must
-- neither hold up deleting an account nor take the account's row lock.

-- +goose Up
CREATE TABLE "ViewerWrites" (
    "UserId" integer NOT NULL,
    "Lsn" bigint NOT NULL,
    CONSTRAINT "PK_ViewerWrites" PRIMARY KEY ("UserId")
);

-- +goose Down
DROP TABLE "ViewerWrites";
