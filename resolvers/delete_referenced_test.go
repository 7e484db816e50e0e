package resolvers_test

import (
	"testing"

	"follows/api/apitest"
)

func TestDeleteUserAnotherAppStillRefersTo(t *testing.T) {
	t.Parallel()
	apitest.Each(t, testDeleteUserAnotherAppStillRefersTo)
}

// An EF Core app sharing the database may keep its own rows that refer to
// a user (a post's author). Deleting that user is refused with a coded
// error that says why, not an INTERNAL_SERVER_ERROR.
func testDeleteUserAnotherAppStillRefersTo(t *testing.T, on apitest.Database) {
	s := on.Start(t)
	author := s.CreateUser("author")
	raw := apitest.OpenDSN(t, s.DSN)
	if _, err := raw.Exec(`CREATE TABLE "Posts" ("Id" integer NOT NULL PRIMARY KEY, "AuthorId" integer NOT NULL REFERENCES "Users" ("Id"))`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO "Posts" ("Id", "AuthorId") VALUES (1, (SELECT "Id" FROM "Users" WHERE "Name" = 'author'))`); err != nil {
		t.Fatal(err)
	}
	r := s.Do(author.Token, `mutation($id: ID!) { deleteUser(input: {userId: $id}) { deletedUserId } }`, map[string]any{"id": author.ID})
	if r.Code() != "FORBIDDEN" || len(r.Errors) == 0 || r.Errors[0].Message != "cannot delete the user: rows of another application's table still refer to it" {
		t.Errorf("delete a user a post refers to: %+v, want FORBIDDEN saying why", r.Errors)
	}
}
