-- How many times any user has been renamed, whoever renamed it: the
-- server keeps the names of users it has ranked among suggestions in
-- memory (db/suggestions.go), each with the count it was read at, and
-- takes a held name only while the count is the same. Suggestions rank
-- by name, so a candidate's name is needed to rank it, and reading every
-- tied candidate's row was most of what was left of a call's cost
-- (docs/decisions/following-versions.md). Renames are rare, so one count
-- for all users costs nothing a write would notice; deactivation and
-- deletion need no count, since the rows of the users a call names are
-- read anyway.

-- +goose Up
CREATE TABLE "UserRenames" (
    "Id" integer NOT NULL CONSTRAINT "PK_UserRenames" PRIMARY KEY CONSTRAINT "CK_UserRenames_One" CHECK ("Id" = 1),
    "Renames" bigint NOT NULL
);
INSERT INTO "UserRenames" ("Id", "Renames") VALUES (1, 0);

-- +goose StatementBegin
CREATE FUNCTION "TR_Users_Rename"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "UserRenames" SET "Renames" = "Renames" + 1;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER "TR_Users_Rename" AFTER UPDATE OF "Name" ON "Users"
    FOR EACH ROW WHEN (OLD."Name" IS DISTINCT FROM NEW."Name") EXECUTE FUNCTION "TR_Users_Rename"();

-- +goose Down
DROP TRIGGER "TR_Users_Rename" ON "Users";
DROP FUNCTION "TR_Users_Rename"();
DROP TABLE "UserRenames";
