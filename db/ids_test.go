package db

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
)

// An import whose LastUserId or a user's id is above MaxUserID is
// refused, saying which and the bound, and leaves nothing behind: taken,
// 2^63-1 left every later sign-up refused as a full disk.
func TestImportRefusesIDsAboveTheBound(t *testing.T) {
	eachImportDialect(t, testImportRefusesIDsAboveTheBound)
}

func testImportRefusesIDsAboveTheBound(t *testing.T, s *Store) {
	ctx := context.Background()
	for _, last := range []int64{math.MaxInt64, MaxUserID + 1, -1} {
		_, err := s.Import(ctx, seqOf(UserRow{ID: 1, Name: "alice"}), seqOf[FollowRow](), last, nil)
		if err == nil || !strings.Contains(err.Error(), "LastUserId") || !strings.Contains(err.Error(), "2147483647") {
			t.Errorf("import with LastUserId %d: %v; want it refused, naming LastUserId and the bound", last, err)
		}
	}
	_, err := s.Import(ctx, seqOf(UserRow{ID: 1, Name: "alice"}, UserRow{Pos: Pos{"users.csv", 3}, ID: MaxUserID + 1, Name: "bob"}), seqOf[FollowRow](), 0, nil)
	var ie ImportErrors
	if !errors.As(err, &ie) || len(ie) != 1 || ie[0].Pos.Line != 3 || !strings.Contains(ie[0].Reason, "above 2147483647") {
		t.Errorf("import of user id %d: %v; want users.csv line 3 refused for the bound", int64(MaxUserID+1), err)
	}
	if g := readGraph(t, s); len(g.users) != 0 {
		t.Errorf("refused imports left users: %+v", g.users)
	}
	if last, err := s.LastUserID(ctx); err != nil || last != 0 {
		t.Errorf("refused imports moved the last user id to %d (%v)", last, err)
	}
}

// When the ids are used up, a sign-up is refused as ErrIDsExhausted on
// every dialect, never as a full disk: the store stays ready, and other
// writes go on.
func TestSignUpPastTheLastID(t *testing.T) {
	for _, d := range importDialects[:2] { // SQL Server's tests share one database, whose identity this would use up
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			testSignUpPastTheLastID(t, d.open(t))
		})
	}
}

func testSignUpPastTheLastID(t *testing.T, s *Store) {
	ctx := context.Background()
	if _, err := s.Import(ctx, seqOf(UserRow{ID: 1, Name: "alice"}), seqOf[FollowRow](), MaxUserID-1, nil); err != nil {
		t.Fatal(err)
	}
	if u, err := s.CreateUser(ctx, "last"); err != nil || u.ID != MaxUserID {
		t.Fatalf("the last sign-up: %+v, %v; want id %d", u, err, int64(MaxUserID))
	}
	for _, name := range []string{"past", "past2"} {
		_, err := s.CreateUser(ctx, name)
		if !errors.Is(err, ErrIDsExhausted) || errors.Is(err, ErrStorageFull) {
			t.Errorf("sign-up past the last id: %v; want ErrIDsExhausted, not ErrStorageFull", err)
		}
	}
	if _, err := s.ProvisionUser(ctx, "subject-1", "carol"); !errors.Is(err, ErrIDsExhausted) || errors.Is(err, ErrStorageFull) {
		t.Errorf("provisioning past the last id: %v; want ErrIDsExhausted", err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready after refused sign-ups: %v; want ready", err)
	}
	if _, err := s.Follow(ctx, 1, MaxUserID); err != nil {
		t.Errorf("a follow after refused sign-ups: %v", err)
	}
}

// A SQLite database whose sequence an older build's import set to 2^63-1
// refuses sign-ups with SQLITE_FULL, the code of a full disk: that is told
// apart, and the store stays ready.
func TestSQLiteSequenceAtItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTestStore(t)
	if _, err := s.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE sqlite_sequence SET seq = ? WHERE name = 'Users'`, int64(math.MaxInt64)); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateUser(ctx, "bob")
	if !errors.Is(err, ErrIDsExhausted) || errors.Is(err, ErrStorageFull) {
		t.Errorf("sign-up with the sequence at 2^63-1: %v; want ErrIDsExhausted, not ErrStorageFull", err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready after the refused sign-up: %v; want ready", err)
	}
}

// Each dialect's word for an identity at its end is ErrIDsExhausted, and
// never ErrStorageFull; SQL Server's arithmetic overflow is only when it
// is the identity's (the live test needs MSSQL_DSN, as the others do).
func TestIDsExhaustedIsClassified(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"postgres sequence", classifyPostgres(&pgconn.PgError{Code: "2200H", Message: `nextval: reached maximum value of sequence "Users_Id_seq" (2147483647)`}), true},
		{"sqlserver identity", classifySQLServer(mssql.Error{Number: 8115, Message: "Arithmetic overflow error converting IDENTITY to data type int."}), true},
		{"sqlserver other overflow", classifySQLServer(mssql.Error{Number: 8115, Message: "Arithmetic overflow error converting expression to data type int."}), false},
	} {
		if got := errors.Is(c.err, ErrIDsExhausted); got != c.want || errors.Is(c.err, ErrStorageFull) {
			t.Errorf("%s: %v; want ErrIDsExhausted %v, never ErrStorageFull", c.name, c.err, c.want)
		}
	}
}
