package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"os"
	"reflect"
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
