package db

import (
	"strings"
	"testing"
)

// A SQL Server whose settings would break the store, or let the counts
// drift without an error, is refused at start, and each refusal carries
// the statement that fixes it: the compatibility level OPENJSON needs,
// the server option "nested triggers" the count trigger needs inside
// TR_Users_Delete, and the two triggers enabled. With MSSQL_DSN, the test
// server passes, and a disabled count trigger is refused by name.
func TestSQLServerSettings(t *testing.T) {
	cases := []struct {
		setting       serverSetting
		subject       string
		good, bad     int
		wantInRefusal []string
	}{
		{compatibilityLevel, "follows", 130, 120, []string{"OPENJSON", "run ALTER DATABASE [follows] SET COMPATIBILITY_LEVEL = 130"}},
		{compatibilityLevel, "odd]name", 160, 100, []string{"run ALTER DATABASE [odd]]name] SET COMPATIBILITY_LEVEL = 130"}},
		{nestedTriggers, "nested triggers", 1, 0, []string{`"nested triggers" is 0`, "run EXEC sp_configure 'nested triggers', 1; RECONFIGURE;"}},
		{enabledTriggers, "ENABLE TRIGGER [TR_Follows_Counts] ON [Follows]; ", 0, 1, []string{"TR_Follows_Counts", "run ENABLE TRIGGER [TR_Follows_Counts] ON [Follows];"}},
	}
	for _, c := range cases {
		if err := c.setting.refusal(c.subject, c.good); err != nil {
			t.Errorf("%s = %d refused: %v", c.setting.name, c.good, err)
		}
		err := c.setting.refusal(c.subject, c.bad)
		if err == nil {
			t.Errorf("%s = %d accepted, want a refusal", c.setting.name, c.bad)
			continue
		}
		for _, want := range c.wantInRefusal {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s = %d: %q lacks %q", c.setting.name, c.bad, err, want)
			}
		}
	}
	// Every check runs at start; nested triggers as in force, not as
	// configured for the next RECONFIGURE ("The run_value is equivalent
	// to the sys.configurations.value_in_use column", sys.configurations),
	// and not on Azure SQL Database, which has neither the view nor the
	// option.
	names := map[string]bool{}
	for _, s := range sqlserverSettings {
		names[s.name] = true
	}
	for _, s := range []serverSetting{compatibilityLevel, nestedTriggers, enabledTriggers} {
		if !names[s.name] {
			t.Errorf("the start-up checks leave out the %s", s.name)
		}
	}
	for _, want := range []string{"c.value_in_use", "N'nested triggers'", "SERVERPROPERTY('EngineEdition') AS int) = 5"} {
		if !strings.Contains(nestedTriggers.query, want) {
			t.Errorf("the nested triggers query lacks %q:\n%s", want, nestedTriggers.query)
		}
	}

	s := openSQLServerLive(t, "to read the test server's settings")
	if s == nil {
		return
	}
	ctx := t.Context()
	if err := checkServerSettings(ctx, s.db); err != nil {
		t.Fatalf("the test server: %v", err)
	}
	if _, err := s.rawExec(`DISABLE TRIGGER [TR_Follows_Counts] ON [Follows]`); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := s.rawExec(`ENABLE TRIGGER [TR_Follows_Counts] ON [Follows]`); err != nil {
			t.Fatal(err)
		}
	}()
	err := checkServerSettings(ctx, s.db)
	if err == nil || !strings.Contains(err.Error(), "run ENABLE TRIGGER [TR_Follows_Counts] ON [Follows];") {
		t.Errorf("with TR_Follows_Counts disabled: %v, want a refusal that enables it", err)
	}
}
