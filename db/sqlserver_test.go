package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"
)

// Times reach SQL Server as datetime2(7): go-mssqldb sends a
// github.com/golang-sql/civil DateTime as one, and anything else that is a
// driver.Valuer (cloud.google.com/go/civil's DateTime was) as what its
// Value returns, a string: nvarchar, converted by the server per row and
// compared against datetime2 columns without their indexes. With
// MSSQL_DSN, the server says which type it received.
func TestSQLServerTimesAreDatetime2(t *testing.T) {
	d := &sqlserverDialect{}
	at := time.Date(2024, 5, 1, 10, 0, 0, 123456700, time.FixedZone("CEST", 2*3600))
	for name, v := range map[string]any{"arg": d.arg(at), "timeArg": d.timeArg(at)} {
		got, ok := v.(civil.DateTime)
		if !ok {
			t.Fatalf("%s sends a %s.%T, not the github.com/golang-sql/civil.DateTime go-mssqldb sends as datetime2",
				name, reflect.TypeOf(v).PkgPath(), v)
		}
		if _, valuer := v.(driver.Valuer); valuer {
			t.Errorf("%s's %T is a driver.Valuer: go-mssqldb would send what Value returns", name, v)
		}
		if want := civil.DateTimeOf(at.UTC()); got != want {
			t.Errorf("%s = %v, want %v (UTC)", name, got, want)
		}
	}
	if os.Getenv("MSSQL_DSN") == "" {
		t.Log(sqlserverSkip + " (for the server's own word on the parameter's type)")
		return
	}
	s := openSQLServer(t)
	var typ string
	var back time.Time
	if err := s.rawQueryRow(`SELECT CAST(SQL_VARIANT_PROPERTY(?, 'BaseType') AS nvarchar(20)), CAST(? AS datetime2(7))`, at, at).Scan(&typ, &back); err != nil {
		t.Fatal(err)
	}
	if typ != "datetime2" {
		t.Errorf("the server received a %s, want datetime2", typ)
	}
	if got, _ := scanSQLServerTime(back); !got.Equal(at) {
		t.Errorf("the time came back as %v, want %v", got, at)
	}
}

// The delete side of a foreign key ("The DELETE statement conflicted with
// the REFERENCE constraint") is rows still referring to the user, run
// again for a race and otherwise told to the client; the insert side is a
// user gone missing.
func TestClassifySQLServerForeignKeySides(t *testing.T) {
	del := mssql.Error{Number: 547, Message: `The DELETE statement conflicted with the REFERENCE constraint "FK_Posts_Users_AuthorId". The conflict occurred in database "follows", table "dbo.Posts", column 'AuthorId'.`}
	got := classifySQLServer(del)
	for _, want := range []error{errRetry, ErrStillReferenced} {
		if !errors.Is(got, want) {
			t.Errorf("delete side: classify = %v, want %v", got, want)
		}
	}
	if errors.Is(got, ErrNotFound) {
		t.Errorf("delete side classified as a missing user: %v", got)
	}
	ins := mssql.Error{Number: 547, Message: `The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Follows_Users_FolloweeId".`}
	if got := classifySQLServer(ins); !errors.Is(got, ErrNotFound) || errors.Is(got, ErrStillReferenced) {
		t.Errorf("insert side: classify = %v, want ErrNotFound", got)
	}
	// A DELETE's error, as the runner marks it, whatever the message.
	if got := classifySQLServer(deleteError{ins}); !errors.Is(got, ErrStillReferenced) {
		t.Errorf("a DELETE's foreign key error: classify = %v, want ErrStillReferenced", got)
	}
}

// OPENJSON needs compatibility level 130: a lower one is refused at start,
// saying what to run.
func TestSQLServerCompatibilityLevel(t *testing.T) {
	for _, level := range []int{130, 150, 160} {
		if err := compatibilityError("follows", level); err != nil {
			t.Errorf("level %d refused: %v", level, err)
		}
	}
	err := compatibilityError("follows", 120)
	if err == nil || !strings.Contains(err.Error(), "OPENJSON") || !strings.Contains(err.Error(), "SET COMPATIBILITY_LEVEL = 130") {
		t.Errorf("level 120: %v, want a refusal naming OPENJSON and the fix", err)
	}
	if os.Getenv("MSSQL_DSN") == "" {
		t.Log(sqlserverSkip + " (for the check against a live database)")
		return
	}
	s := openSQLServer(t)
	if err := checkCompatibilityLevel(context.Background(), s.db); err != nil {
		t.Errorf("the test database: %v", err)
	}
}

// The event outbox's lock is checked: sp_getapplock says it did not grant
// a lock only by its return code ("sp_getapplock (Transact-SQL)": -1
// timed out, -2 canceled, -3 chosen as deadlock victim, -999 a call
// error; "a deadlock with an application lock does not roll back the
// transaction"), and waits for ever by default (@@LOCK_TIMEOUT, -1). A
// statement that ignored the code would let the writer draw an event Id
// without the lock, and a reader move past it before it commits.
func TestSQLServerEventLockChecksItsResult(t *testing.T) {
	q := (&sqlserverDialect{}).lockEvents()
	steps := []string{
		"DECLARE @rc int;",
		"EXEC @rc = sp_getapplock @Resource = N'FollowEvents', @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = 10000;",
		"IF @rc < 0",
		"DECLARE @n int = 51000 - @rc, @msg nvarchar(2048) = CONCAT(N'sp_getapplock on FollowEvents returned ', @rc);",
		"THROW @n, @msg, 1;",
	}
	requireSubsequence(t, "the event lock statement", q, steps)
	// "The statement before the THROW statement must be followed by the
	// semicolon (;) statement terminator." (THROW (Transact-SQL))
	before := strings.TrimSpace(q[:strings.Index(q, "THROW")])
	if !strings.HasSuffix(before, ";") {
		t.Errorf("the statement before THROW does not end with a semicolon:\n%s", q)
	}
	if os.Getenv("MSSQL_DSN") == "" {
		t.Log(sqlserverSkip + " (for a lock held elsewhere timing out)")
		return
	}
	// Live: another transaction holds the lock; the statement waits its
	// @LockTimeout, then fails with an error the store runs again.
	s := openSQLServer(t)
	ctx := context.Background()
	holder, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, q); err != nil {
		t.Fatalf("take the lock: %v", err)
	}
	waiter, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Rollback()
	_, err = waiter.ExecContext(ctx, q)
	if got := classifySQLServer(err); !errors.Is(got, errRetry) {
		t.Errorf("a lock that timed out: %v, want an error the store runs again", got)
	}
}

// What lockEvents throws, as go-mssqldb returns it: THROW's severity is
// 16, its number mssqlLockFailed minus sp_getapplock's return code.
func TestClassifySQLServerEventLockFailure(t *testing.T) {
	for rc, retried := range map[int]bool{-1: true, -2: true, -3: true, -999: false} {
		e := mssql.Error{Number: int32(mssqlLockFailed - rc), Class: 16, State: 1,
			Message: "sp_getapplock on FollowEvents returned " + strconv.Itoa(rc)}
		got := classifySQLServer(fmt.Errorf("lock the event outbox: %w", e))
		if errors.Is(got, errRetry) != retried {
			t.Errorf("return code %d: classify = %v, run again %v, want %v", rc, got, errors.Is(got, errRetry), retried)
		}
	}
}

// Duplicate keys and constraint conflicts are told apart by the name the
// message gives, in the forms "Database engine events and errors"
// documents for SQL Server 2016:
//
//	2627 Violation of %ls constraint '%.*ls'. Cannot insert duplicate key in object '%.*ls'. The duplicate key value is %ls.
//	2601 Cannot insert duplicate key row in object '%.*ls' with unique index '%.*ls'. The duplicate key value is %ls.
//	547  The %ls statement conflicted with the %ls constraint "%.*ls". The conflict occurred in database "%.*ls", table "%.*ls"%ls%.*ls%ls.
//
// The duplicate value ends the message, and it is a user's name or an
// identity provider's subject: whatever it spells, it is not the name.
func TestClassifySQLServerByConstraintName(t *testing.T) {
	nameRow := func(value string) string {
		return "Cannot insert duplicate key row in object 'dbo.Users' with unique index 'IX_Users_Name'. The duplicate key value is (" + value + ")."
	}
	subjectRow := func(value string) string {
		return "Cannot insert duplicate key row in object 'dbo.Users' with unique index 'IX_Users_ExternalId'. The duplicate key value is (" + value + ")."
	}
	tests := []struct {
		name      string
		err       mssql.Error
		want      []error // the error must be each of these
		wantNot   []error // and none of these
		unchanged bool    // nothing the store acts on
	}{
		{name: "follow race", err: mssql.Error{Number: 2627, Message: "Violation of PRIMARY KEY constraint 'PK_Follows'. Cannot insert duplicate key in object 'dbo.Follows'. The duplicate key value is (1, 2)."},
			want: []error{errRetry, errDuplicate}},
		{name: "block race", err: mssql.Error{Number: 2627, Message: "Violation of PRIMARY KEY constraint 'PK_Blocks'. Cannot insert duplicate key in object 'dbo.Blocks'. The duplicate key value is (1, 2)."},
			want: []error{errRetry, errDuplicate}},
		{name: "name taken", err: mssql.Error{Number: 2601, Message: nameRow("alice")},
			want: []error{ErrNameTaken}, wantNot: []error{errRetry}},
		{name: "a user named PK_Follows whose name is taken", err: mssql.Error{Number: 2601, Message: nameRow("PK_Follows")},
			want: []error{ErrNameTaken}, wantNot: []error{errRetry, errDuplicate}},
		{name: "a user named PK_Blocks whose name is taken", err: mssql.Error{Number: 2601, Message: nameRow("PK_Blocks")},
			want: []error{ErrNameTaken}, wantNot: []error{errRetry, errDuplicate}},
		{name: "a subject IX_Users_Name provisioned twice", err: mssql.Error{Number: 2601, Message: subjectRow("IX_Users_Name")},
			wantNot: []error{ErrNameTaken, errRetry}, unchanged: true},
		{name: "a subject that spells another index", err: mssql.Error{Number: 2601, Message: subjectRow("x' with unique index 'IX_Users_Name")},
			wantNot: []error{ErrNameTaken, errRetry}, unchanged: true},
		{name: "a subject PK_Follows provisioned twice", err: mssql.Error{Number: 2601, Message: subjectRow("PK_Follows")},
			wantNot: []error{errRetry, errDuplicate}, unchanged: true},
		{name: "a name that spells the follows' key", err: mssql.Error{Number: 2601, Message: nameRow("a'. Violation of PRIMARY KEY constraint 'PK_Follows")},
			want: []error{ErrNameTaken}, wantNot: []error{errRetry}},
		{name: "self-follow", err: mssql.Error{Number: 547, Message: `The INSERT statement conflicted with the CHECK constraint "CK_Follows_NoSelfFollow". The conflict occurred in database "follows", table "dbo.Follows".`},
			want: []error{ErrSelfFollow}},
		{name: "self-block", err: mssql.Error{Number: 547, Message: `The INSERT statement conflicted with the CHECK constraint "CK_Blocks_NoSelfBlock". The conflict occurred in database "follows", table "dbo.Blocks".`},
			want: []error{ErrSelfBlock}},
		{name: "a user gone, in a database whose name spells the delete side", err: mssql.Error{Number: 547, Message: `The INSERT statement conflicted with the FOREIGN KEY constraint "FK_Follows_Users_FolloweeId". The conflict occurred in database "REFERENCE constraint", table "dbo.Users", column 'Id'.`},
			want: []error{ErrNotFound}, wantNot: []error{ErrStillReferenced}},
		{name: "another CHECK, in a database whose name spells ours", err: mssql.Error{Number: 547, Message: `The UPDATE statement conflicted with the CHECK constraint "CK_Posts_Length". The conflict occurred in database "CK_Follows_NoSelfFollow", table "dbo.Posts", column 'Body'.`},
			wantNot: []error{ErrSelfFollow}, unchanged: true},
		{name: "a self-referencing key", err: mssql.Error{Number: 547, Message: `The INSERT statement conflicted with the FOREIGN KEY SAME TABLE constraint "FK_Users_Users_InvitedById". The conflict occurred in database "follows", table "dbo.Users", column 'Id'.`},
			want: []error{ErrNotFound}},
		{name: "deadlock", err: mssql.Error{Number: 1205, Message: "Transaction (Process ID 52) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction."},
			want: []error{errRetry}},
		{name: "snapshot update conflict", err: mssql.Error{Number: 3960, Message: "Snapshot isolation transaction aborted due to update conflict. You cannot use snapshot isolation to access table 'dbo.Users' directly or indirectly in database 'follows' to update, delete, or insert the row that has been modified or deleted by another transaction. Retry the transaction or change the isolation level for the update/delete statement."},
			want: []error{errRetry}},
		// SET LOCK_TIMEOUT is never set by the store; as PostgreSQL's
		// lock_not_available, a lock timeout is not run again.
		{name: "lock timeout", err: mssql.Error{Number: 1222, Message: "Lock request time out period exceeded."},
			wantNot: []error{errRetry}, unchanged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifySQLServer(tc.err)
			for _, want := range tc.want {
				if !errors.Is(got, want) {
					t.Errorf("classify = %v, want %v", got, want)
				}
			}
			for _, not := range tc.wantNot {
				if errors.Is(got, not) {
					t.Errorf("classify = %v, must not be %v", got, not)
				}
			}
			if _, same := got.(mssql.Error); tc.unchanged && !same {
				t.Errorf("classify = %v, want the driver's error as it was", got)
			}
		})
	}
}

// A 547 raised inside TR_Users_Delete, the INSTEAD OF DELETE trigger, by
// its DELETE of the user: the trigger runs with XACT_ABORT on ("SET
// XACT_ABORT (Transact-SQL)": "ON is the default setting in a trigger"),
// so the server rolls back the caller's whole transaction. DeleteUser still
// answers that rows refer to the user (run again, then told), also when
// the batch's last error is the trigger's own notice, which go-mssqldb
// puts in Number, the earlier errors in All:
//
//	3609 The transaction ended in the trigger. The batch has been aborted.
//	3616 An error was raised during trigger execution. The batch has been aborted and the user transaction, if any, has been rolled back.
func TestClassifySQLServerErrorInsideTrigger(t *testing.T) {
	ref := mssql.Error{Number: 547, Class: 16, ProcName: "TR_Users_Delete",
		Message: `The DELETE statement conflicted with the REFERENCE constraint "FK_Posts_Users_AuthorId". The conflict occurred in database "follows", table "dbo.Posts", column 'AuthorId'.`}
	for _, last := range []mssql.Error{
		{Number: 3609, Class: 16, Message: "The transaction ended in the trigger. The batch has been aborted."},
		{Number: 3616, Class: 16, Message: "An error was raised during trigger execution. The batch has been aborted and the user transaction, if any, has been rolled back."},
	} {
		batch := last
		batch.All = []mssql.Error{ref, last}
		for name, err := range map[string]error{"the trigger's error": ref, "the batch's errors": batch} {
			got := classifySQLServer(deleteError{fmt.Errorf("delete user 1: %w", err)})
			if !errors.Is(got, ErrStillReferenced) || !errors.Is(got, errRetry) {
				t.Errorf("%s ending with %d: classify = %v, want ErrStillReferenced, run again", name, last.Number, got)
			}
		}
	}
}

// The store's sessions have the SET options that DML on a table with a
// filtered index needs (IX_Users_ExternalId, migration 7): "SET options
// with required values" in "CREATE INDEX (Transact-SQL)": ANSI_NULLS,
// ANSI_PADDING, ANSI_WARNINGS, CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER
// ON and NUMERIC_ROUNDABORT OFF (ARITHABORT follows ANSI_WARNINGS at
// compatibility level 90 and up); otherwise every write to Users fails
// with Msg 1934. The store sets none of them: go-mssqldb logs in with the
// ODBC flag, and the server gives the session its ODBC defaults. And
// XACT_ABORT is off, so an error ends only its statement outside
// triggers (the store rolls back itself). Only a live server can say.
func TestSQLServerSessionOptions(t *testing.T) {
	if os.Getenv("MSSQL_DSN") == "" {
		t.Skip(sqlserverSkip + " (for the session's SET options)")
	}
	s := openSQLServer(t)
	var quoted, nulls, padding, warnings, concat, roundabort, xactAbort int
	err := s.rawQueryRow(`SELECT CAST(SESSIONPROPERTY('QUOTED_IDENTIFIER') AS int), CAST(SESSIONPROPERTY('ANSI_NULLS') AS int),
CAST(SESSIONPROPERTY('ANSI_PADDING') AS int), CAST(SESSIONPROPERTY('ANSI_WARNINGS') AS int),
CAST(SESSIONPROPERTY('CONCAT_NULL_YIELDS_NULL') AS int), CAST(SESSIONPROPERTY('NUMERIC_ROUNDABORT') AS int),
CASE WHEN @@OPTIONS & 16384 = 16384 THEN 1 ELSE 0 END`).Scan(&quoted, &nulls, &padding, &warnings, &concat, &roundabort, &xactAbort)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]int{
		"QUOTED_IDENTIFIER": {quoted, 1}, "ANSI_NULLS": {nulls, 1}, "ANSI_PADDING": {padding, 1}, "ANSI_WARNINGS": {warnings, 1},
		"CONCAT_NULL_YIELDS_NULL": {concat, 1}, "NUMERIC_ROUNDABORT": {roundabort, 0}, "XACT_ABORT": {xactAbort, 0},
	} {
		if got[0] != got[1] {
			t.Errorf("the session's %s is %d, want %d", name, got[0], got[1])
		}
	}
}

// Names and subjects that spell a constraint's name are values like any
// other: a taken name named PK_Follows is a taken name (not a follow race
// run again and then INTERNAL), and a second account for a subject named
// IX_Users_Name is refused as a duplicate subject, not as a taken name.
// On every dialect there is a database for; the classification of SQL
// Server's messages is TestClassifySQLServerByConstraintName.
func TestDuplicatesNamedLikeConstraints(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if _, err := s.CreateUser(ctx, "PK_Follows"); err != nil {
			t.Fatal(err)
		}
		_, err := s.CreateUser(ctx, "PK_Follows")
		if !errors.Is(err, ErrNameTaken) || errors.Is(err, errRetry) {
			t.Errorf("sign up as a taken name PK_Follows: %v, want ErrNameTaken", err)
		}
		if _, err := s.ProvisionUser(ctx, "IX_Users_Name", "first"); err != nil {
			t.Fatal(err)
		}
		// What a replica that lost the provisioning race meets.
		_, err = s.createExternal(ctx, "IX_Users_Name", "second")
		if err == nil || errors.Is(err, ErrNameTaken) || errors.Is(err, errRetry) {
			t.Errorf("a second account for subject IX_Users_Name: %v, want a duplicate-subject error", err)
		}
		if _, err := s.UserByName(ctx, "second"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the refused account exists: %v", err)
		}
	})
}

// A login whose default language is not English gets SQL Server's
// messages translated (go-mssqldb asks for no language, so the login's
// default, which a non-English install gives new logins, applies). The
// texts below are NOT quoted from SQL Server: they stand for any
// translation that, as the English text does, names the key before the
// duplicate value of its last sentence, and keeps the 547's keywords.
func TestClassifySQLServerTranslatedMessages(t *testing.T) {
	tests := []struct {
		name    string
		msg     string
		number  int32
		want    error
		wantNot error
	}{
		{"name taken, value spelling the follows' key", "Zeile mit doppeltem Schlüssel im Objekt dbo.Users mit dem eindeutigen Index IX_Users_Name. Doppelter Schlüsselwert: (PK_Follows).", 2601, ErrNameTaken, errRetry},
		{"subject taken, value spelling the name index", "Zeile mit doppeltem Schlüssel im Objekt dbo.Users mit dem eindeutigen Index IX_Users_ExternalId. Doppelter Schlüsselwert: (IX_Users_Name).", 2601, nil, ErrNameTaken},
		{"follow race", "Verletzung der PRIMARY KEY-Einschränkung PK_Follows. Objekt dbo.Follows. Doppelter Schlüsselwert: (1, 2).", 2627, errRetry, ErrNameTaken},
		{"an app's index whose name starts like ours", "Zeile mit doppeltem Schlüssel im Objekt dbo.Users mit dem eindeutigen Index IX_Users_Name2. Doppelter Schlüsselwert: (x).", 2601, nil, ErrNameTaken},
		{"delete side", `Die DELETE-Anweisung steht in Konflikt mit der REFERENCE-Einschränkung "FK_Posts_Users_AuthorId".`, 547, ErrStillReferenced, ErrNotFound},
		{"insert side", `Die INSERT-Anweisung steht in Konflikt mit der FOREIGN KEY-Einschränkung "FK_Follows_Users_FolloweeId".`, 547, ErrNotFound, ErrStillReferenced},
		{"self-follow", `Die INSERT-Anweisung steht in Konflikt mit der CHECK-Einschränkung "CK_Follows_NoSelfFollow".`, 547, ErrSelfFollow, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifySQLServer(mssql.Error{Number: tc.number, Message: tc.msg})
			if tc.want != nil && !errors.Is(got, tc.want) {
				t.Errorf("classify = %v, want %v", got, tc.want)
			}
			if tc.want == nil {
				if _, same := got.(mssql.Error); !same {
					t.Errorf("classify = %v, want the driver's error as it was", got)
				}
			}
			if tc.wantNot != nil && errors.Is(got, tc.wantNot) {
				t.Errorf("classify = %v, must not be %v", got, tc.wantNot)
			}
		})
	}
}

// The reads that lock users on SQL Server seek the primary key: under
// HOLDLOCK (SERIALIZABLE) a scan would take range locks between the keys
// it passes, and every sign-up would wait for a deactivation's commit,
// whatever LOCK_ESCALATION says.
func TestSQLServerRowLocksSeek(t *testing.T) {
	q := newStatements(&sqlserverDialect{})
	for name, stmt := range map[string]string{"selectPairUsers": q.selectPairUsers, "lockAroundUser": q.lockAroundUser} {
		if !strings.Contains(stmt, "WITH (UPDLOCK, HOLDLOCK, FORCESEEK)") {
			t.Errorf("%s locks without FORCESEEK:\n%s", name, stmt)
		}
	}
}

// requireSubsequence fails t unless text holds each of steps, each after the
// one before: what says whose text it is.
func requireSubsequence(t *testing.T, what, text string, steps []string) {
	t.Helper()
	at := 0
	for _, step := range steps {
		i := strings.Index(text[at:], step)
		if i < 0 {
			t.Fatalf("%s lacks %q after what comes before it:\n%s", what, step, text)
		}
		at += i + len(step)
	}
}
