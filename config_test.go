package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"follows/api"
	"follows/api/apitest"
	"follows/db"
)

// parseServer reads the server's configuration from args and env as run
// does, and returns its flags for inspection.
func parseServer(args []string, env map[string]string) (*server, *flag.FlagSet, error) {
	s := &server{}
	fs := newFlagSet("follows", io.Discard, func(k string) string { return env[k] })
	s.flags(fs)
	err := fs.Parse(args)
	return s, fs.FlagSet, err
}

// envName is the variable every flag can be given in.
func envName(flagName string) string {
	return "FOLLOWS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// writeSecret writes a secret file in a temp dir and returns its path.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every flag of the server takes its value from its FOLLOWS_ variable
// when the command line does not give it (FOLLOWS_SECRET_FILE, which
// gives the secret, is in TestSecretFile).
func TestEveryFlagHasEnv(t *testing.T) {
	_, all, _ := parseServer(nil, nil)
	all.VisitAll(func(f *flag.Flag) {
		t.Run(f.Name, func(t *testing.T) {
			if f.Name == "secret-file" {
				return
			}
			// A value each flag takes, by its name or else by its type.
			value := map[string]string{"log-format": "json", "rate-signup": "7/h", "rate-mutations": "7/h"}[f.Name]
			if value == "" {
				value = map[string]string{"bool": "true", "time.Duration": "1m0s", "int": "7", "int64": "7", "string": "x"}[fmt.Sprintf("%T", f.Value.(flag.Getter).Get())]
			}
			if value == "" {
				t.Fatalf("no test value for -%s", f.Name)
			}
			_, fs, err := parseServer(nil, map[string]string{envName(f.Name): value})
			if err != nil {
				t.Fatalf("%s=%s: %v", envName(f.Name), value, err)
			}
			if got := fs.Lookup(f.Name).Value.String(); got != value {
				t.Errorf("%s=%s: -%s is %s", envName(f.Name), value, f.Name, got)
			}
		})
	})
}

// -h of the server and of each subcommand lists every flag with the
// variable it can be given in.
func TestHelpListsEnv(t *testing.T) {
	flagLine := regexp.MustCompile(`^  -([a-z-]+)`)
	for _, cmd := range [][]string{{"-h"}, {"token", "-h"}, {"import", "-h"}, {"export", "-h"}, {"migrate", "-h"}, {"schema", "-h"}, {"copy", "-h"}, {"check-counts", "-h"}} {
		var out strings.Builder
		err := run(t.Context(), cmd, io.Discard, &out, noEnv)
		if err != flag.ErrHelp {
			t.Fatalf("%v: %v, want flag.ErrHelp", cmd, err)
		}
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		flags := 0
		for sc.Scan() {
			m := flagLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			flags++
			sc.Scan() // the usage is on the next line
			if want := "(env " + envName(m[1]); !strings.Contains(sc.Text(), want) {
				t.Errorf("%v: -%s's help %q lacks %q", cmd, m[1], sc.Text(), want)
			}
		}
		if flags == 0 {
			t.Errorf("%v listed no flags:\n%s", cmd, out.String())
		}
	}
}

// A flag beats its FOLLOWS_ variable, which beats the variable the flag
// was read from before, which beats the default.
func TestConfigPrecedence(t *testing.T) {
	legacy := map[string]string{"addr": "ADDR", "db": "DATABASE_URL", "secret": "TOKEN_SECRET", "token-ttl": "TOKEN_TTL", "cors-origins": "CORS_ORIGINS"}
	for name, old := range legacy {
		t.Run(name, func(t *testing.T) {
			v := func(n int) string {
				if name == "token-ttl" {
					return fmt.Sprintf("%dh0m0s", n)
				}
				return fmt.Sprintf("value%d", n)
			}
			_, fs, _ := parseServer(nil, nil)
			def := fs.Lookup(name).DefValue
			for _, tc := range []struct {
				args []string
				env  map[string]string
				want string
			}{
				{nil, nil, def},
				{nil, map[string]string{old: v(3)}, v(3)},
				{nil, map[string]string{old: v(3), envName(name): v(2)}, v(2)},
				{[]string{"-" + name, v(1)}, map[string]string{old: v(3), envName(name): v(2)}, v(1)},
				{[]string{"-" + name, v(1)}, map[string]string{old: v(3)}, v(1)},
				{nil, map[string]string{old: "", envName(name): ""}, def}, // empty is unset
			} {
				_, fs, err := parseServer(tc.args, tc.env)
				if err != nil {
					t.Fatalf("%v %v: %v", tc.args, tc.env, err)
				}
				if got := fs.Lookup(name).Value.String(); got != tc.want {
					t.Errorf("%v %v: -%s is %q, want %q", tc.args, tc.env, name, got, tc.want)
				}
			}
		})
	}
}

// `schema` prints a dialect's DDL without a database; its -dialect, a
// subcommand's own flag, has a variable too, which the flag beats.
func TestSchemaSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-dialect", "sqlserver"}, nil, "CONSTRAINT [FK_Follows_Users_FolloweeId] FOREIGN KEY ([FolloweeId]) REFERENCES [Users] ([Id]) ON DELETE CASCADE,"},
		{[]string{"-dialect", "sqlite"}, nil, `CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId")`},
		{[]string{"-dialect", "postgres"}, nil, `CREATE UNIQUE INDEX "IX_Users_Name" ON "Users" (lower("Name"));`},
		{nil, map[string]string{"FOLLOWS_DIALECT": "sqlserver"}, "schema for sqlserver"},
		{[]string{"-dialect", "sqlite"}, map[string]string{"FOLLOWS_DIALECT": "sqlserver"}, "schema for sqlite"},
		// Runnable by hand, then started on (db's TestSQLServerScriptForSqlcmd).
		{[]string{"-dialect", "sqlserver"}, nil, "\nSET QUOTED_IDENTIFIER ON;\nGO\n"},
		{[]string{"-dialect", "sqlserver"}, nil, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (1, 1);\nGO\n"},
	} {
		var out, errs strings.Builder
		dir := t.TempDir()
		t.Chdir(dir)
		if err := run(t.Context(), append([]string{"schema"}, tc.args...), &out, &errs, func(k string) string { return tc.env[k] }); err != nil {
			t.Fatalf("schema %v %v: %v %s", tc.args, tc.env, err, errs.String())
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("schema %v %v lacks %s; printed %.60q", tc.args, tc.env, tc.want, out.String())
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("schema %v %v wrote files: it must touch no database", tc.args, tc.env)
		}
	}
}

// A value that does not parse stops the server at start, naming the flag
// or variable it came from. (Which rates parse is api's TestRateFlag.)
func TestBadConfigValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"TOKEN_TTL": "a month"}, "TOKEN_TTL"},
		{nil, map[string]string{"FOLLOWS_TOKEN_TTL": "a month"}, "FOLLOWS_TOKEN_TTL"},
		{nil, map[string]string{"FOLLOWS_MAX_BODY": "abc"}, "FOLLOWS_MAX_BODY"},
		{nil, map[string]string{"FOLLOWS_DEMO": "maybe"}, "FOLLOWS_DEMO"},
		{nil, map[string]string{"FOLLOWS_LOG_FORMAT": "xml"}, "FOLLOWS_LOG_FORMAT"},
		{[]string{"-log-format", "xml"}, nil, "-log-format"},
		{[]string{"-max-depth", "deep"}, nil, "-max-depth"},
		{nil, map[string]string{"FOLLOWS_SECRET_FILE": "/nonexistent/secret"}, "FOLLOWS_SECRET_FILE"},
		{nil, map[string]string{"FOLLOWS_RATE_MUTATIONS": "10/fortnight"}, "FOLLOWS_RATE_MUTATIONS"},
		{[]string{"-request-timeout", "1m"}, nil, "-write-timeout"},
		{[]string{"-max-conns", "-1"}, nil, "-max-conns"},
		{[]string{"-max-conns", "100", "-max-streams", "100"}, nil, "-max-streams"},
		{[]string{"-max-client-streams", "-1"}, nil, "-max-client-streams"},
	} {
		dir := t.TempDir()
		args := append([]string{"-check-counts", "-db", filepath.Join(dir, "x.db")}, tc.args...)
		err := run(t.Context(), args, io.Discard, io.Discard, func(k string) string { return tc.env[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one naming %s", tc.args, tc.env, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v %v: the database was opened before the error", tc.args, tc.env)
		}
	}
}

// The secret can come from a file, so it need not be on the command line
// or in the environment; the file and -secret are one setting, taken from
// the strongest source that gives either. (How a file's content is read,
// line ends and spaces, is auth's TestReadSecret.)
func TestSecretFile(t *testing.T) {
	file := writeSecret(t, "from-file\n")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string // the secret, or the error
	}{
		{[]string{"-secret-file", file}, nil, "from-file"},
		{nil, map[string]string{"FOLLOWS_SECRET_FILE": file}, "from-file"},
		{nil, map[string]string{"FOLLOWS_SECRET_FILE": file, "TOKEN_SECRET": "legacy"}, "from-file"},
		{nil, map[string]string{"FOLLOWS_SECRET": "env", "TOKEN_SECRET": "legacy"}, "env"},
		{[]string{"-secret-file", file}, map[string]string{"FOLLOWS_SECRET": "env"}, "from-file"},
		{[]string{"-secret", "flag"}, map[string]string{"FOLLOWS_SECRET_FILE": file}, "flag"},
		{[]string{"-secret", "flag", "-secret-file", file}, nil, "error: give -secret or -secret-file, not both"},
		{nil, map[string]string{"FOLLOWS_SECRET": "env", "FOLLOWS_SECRET_FILE": file}, "error: give FOLLOWS_SECRET or FOLLOWS_SECRET_FILE, not both"},
		{[]string{"-secret-file", writeSecret(t, "\n")}, nil, "error: invalid value"},
	} {
		c, _, err := parseServer(tc.args, tc.env)
		got := c.secret
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v %v: %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// The connection and rate flags reach the server's configuration (values
// that make no sense are in TestBadConfigValues).
func TestConnectionAndRateFlags(t *testing.T) {
	c, _, err := parseServer([]string{"-rate-signup", "5/10m", "-max-conns", "50", "-idle-timeout", "5s"},
		map[string]string{"FOLLOWS_RATE_MUTATIONS": "off", "FOLLOWS_CLIENT_IP_HEADER": "X-Real-IP"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	h, s := c.api, c.conns
	if h.SignupRate != (api.Rate{N: 5, Per: 10 * time.Minute}) || h.MutationRate != (api.Rate{}) || h.ClientIPHeader != "X-Real-IP" {
		t.Errorf("handler configuration %+v", h)
	}
	if want := (api.ServerConfig{ReadTimeout: 20 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 5 * time.Second, MaxConns: 50, MaxClientConns: 100, ShutdownGrace: 10 * time.Second}); s != want {
		t.Errorf("server configuration %+v, want %+v", s, want)
	}
}

// Each subcommand takes only the flags it uses: one it would ignore, such
// as import's or migrate's -secret and -token-ttl, is a usage error before
// anything is opened.
func TestSubcommandsTakeOnlyTheirFlags(t *testing.T) {
	for _, args := range [][]string{
		{"import", "-max-depth", "3", "-dir", "graph"},
		{"migrate", "-addr", ":0"},
		{"export", "-demo", "-dir", "graph"},
		{"check-counts", "-max-depth", "3"},
		{"copy", "-db", "x.db", "-from", "a.db", "-to", "b.db"},
		{"schema", "-db", "x.db"},
	} {
		dir := t.TempDir()
		t.Chdir(dir)
		var usage strings.Builder
		err := run(t.Context(), args, io.Discard, &usage, noEnv)
		if err == nil || !strings.Contains(err.Error(), "flag provided but not defined: "+args[1]) || !strings.Contains(usage.String(), "Usage of follows "+args[0]) {
			t.Errorf("%v: %v, usage %.40q; want a usage error for %s", args, err, usage.String(), args[1])
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v: opened a database before refusing the flag", args)
		}
	}
}

// The subcommands that sign no tokens still take the signing flags every
// command took before, as scripts pass them (-secret to import), and say
// that they ignore them; the flags after them still count.
func TestSubcommandsIgnoreUnusedSigningFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "follows.db")
	for _, args := range [][]string{
		{"migrate", "-secret", testSecret, "-db", path},
		{"migrate", "--token-ttl=1h", "-db", path},
		{"check-counts", "-secret-file", "nowhere", "-db", path, "-token-ttl", "1h"},
	} {
		var stderr strings.Builder
		if err := run(t.Context(), args, io.Discard, &stderr, noEnv); err != nil {
			t.Errorf("%v: %v\n%s", args, err, &stderr)
		}
		if !strings.Contains(stderr.String(), "is not used by this command: ignored") {
			t.Errorf("%v: stderr %q does not say the flag is ignored", args, &stderr)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("-db after an ignored flag was not read: %v", err)
	}
}

// check-counts is a subcommand; the server's -check-counts still does the
// same, and says on stderr that it is deprecated in favour of it.
func TestCheckCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "follows.db")
	store, err := db.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadSample(t.Context()); err != nil {
		t.Fatal(err)
	}
	store.Close()
	for _, args := range [][]string{{"check-counts", "-db", path}, {"-check-counts", "-db", path}} {
		if _, err := apitest.OpenRaw(t, path).Exec(`UPDATE Users SET FollowingCount = 7 WHERE Name = 'carol'`); err != nil {
			t.Fatal(err)
		}
		var out, errs strings.Builder
		if err := run(t.Context(), args, &out, &errs, noEnv); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "(carol): followers 1, recounted 1; following 7, recounted 1") || !strings.Contains(out.String(), "1 users had drifted counts; repaired") {
			t.Errorf("%v printed %q", args, out.String())
		}
		if deprecated := strings.Contains(errs.String(), "deprecated") && strings.Contains(errs.String(), "follows check-counts"); deprecated != (args[0] == "-check-counts") {
			t.Errorf("%v said on stderr %q", args, errs.String())
		}
	}
}

// docs/configuration.md is what the flag sets say.
func TestConfigurationDocIsCurrent(t *testing.T) {
	var want strings.Builder
	if err := writeConfigDoc(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("docs/configuration.md")
	if err != nil || string(got) != want.String() {
		t.Fatalf("docs/configuration.md is not what the flags say (%v); regenerate it: go run . config-doc > docs/configuration.md (or go generate .)", err)
	}
	for _, c := range commands {
		if !strings.Contains(want.String(), "## `"+strings.TrimSpace("follows "+c.name)+"`") {
			t.Errorf("the configuration reference has no section for %q", c.name)
		}
	}
}

// The server's collector settings are the server's alone: main, running
// a subcommand in a process of its own, leaves Go's defaults (GOGC 100, no
// memory limit), which an import's heap, far larger than a server's, needs.
func TestSubcommandsKeepGoGC(t *testing.T) {
	dir := t.TempDir()
	users, follows := filepath.Join(dir, "users.csv"), filepath.Join(dir, "follows.csv")
	os.WriteFile(users, []byte("Id,Name\n1,alice\n2,bob\n"), 0o600)
	os.WriteFile(follows, []byte("FollowerId,FolloweeId,CreatedAt\n1,2,2026-01-01 00:00:01\n"), 0o600)
	dbPath := filepath.Join(dir, "follows.db")
	for _, args := range []string{
		"import -db " + dbPath + " -users " + users + " -follows " + follows,
		"check-counts -db " + dbPath,
		"schema -dialect sqlite",
	} {
		out, err := runMain(t, args)
		if err != nil {
			t.Fatalf("%s: %v\n%s", args, err, out)
		}
		if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "GOGC=100 GOMEMLIMIT=9223372036854775807" {
			t.Errorf("%s ran with %s; want Go's defaults", args, lines[len(lines)-1])
		}
	}
}

// The server sets its collector unless the environment does.
func TestServerGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	serverGC(noEnv)
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 400 || l != 44<<20 {
		t.Errorf("the server's collector: GOGC %d, GOMEMLIMIT %d; want 400, 44 MiB", p, l)
	}
	serverGC(func(k string) string { return map[string]string{"GOGC": "200", "GOMEMLIMIT": "1GiB"}[k] })
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 100 || l != math.MaxInt64 {
		t.Errorf("with GOGC and GOMEMLIMIT set, the server changed them: %d, %d", p, l)
	}
}

// The issuer, audience and key set go together: a server given some but
// not all stops at start, as does one whose key set file is not there.
func TestOIDCFlagsGoTogether(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-oidc-issuer", "https://id.example/"}, "all three"},
		{[]string{"-oidc-audience", "app", "-oidc-jwks", "https://id.example/jwks"}, "all three"},
		{[]string{"-oidc-issuer", "https://id.example/", "-oidc-audience", "app", "-oidc-jwks", filepath.Join(t.TempDir(), "none.json")}, "JWKS file"},
	} {
		err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0", "-db", dsn}, tc.args...), io.Discard, io.Discard, noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
}
