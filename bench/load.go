package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"follows/auth"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"
)

// benchSecret signs the benchmark's tokens; the server takes no secret
// shorter than auth.MinSecret.
const benchSecret = "bench secret, as long as the server asks"

// runLoad imports a generated graph into a fresh database, starts the
// server binary on it, drives the benchmark queries at each concurrency
// over loopback and prints a Markdown table. The database is a SQLite file
// in the working folder, or with -db a PostgreSQL database that it
// creates on that server (and drops at the end).
func runLoad(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench load", flag.ContinueOnError)
	size := fs.String("size", "large", "graph size: small, large or xlarge")
	dir := fs.String("dir", "", "working folder for the graph and database (default: a temporary one)")
	duration := fs.Duration("duration", 5*time.Second, "how long each query runs at each concurrency")
	concs := fs.String("c", "8,32", "concurrency levels")
	only := fs.String("only", "", "comma-separated query names to run (default all)")
	server := fs.String("db", "", "a postgres:// URL whose role may create databases: run on a new PostgreSQL database there, "+benchDatabase+", rather than on a SQLite file")
	graph := fs.String("graph", "", "a folder where bench gen already wrote this -size's users.csv and follows.csv: import those rather than generate them")
	imported := fs.String("imported", "", "a SQLite file or postgres:// URL that already holds this -size's graph: serve it as it is, with no generation or import (W1 writes to it)")
	replica := fs.String("replica", "", "a postgres:// URL of a streaming standby of -imported: the server reads from it too (-db-replica)")
	serverBin := fs.String("server", "", "a server binary to run rather than one built from this folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n := graphSizes[*size]
	if n == 0 {
		return fmt.Errorf("unknown -size %q", *size)
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "follows-bench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}

	bin := *serverBin
	if bin == "" {
		bin = filepath.Join(*dir, "follows")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			return fmt.Errorf("build server: %v\n%s", err, out)
		}
	}
	dbPath := *imported
	if dbPath == "" {
		var drop func()
		var err error
		if dbPath, drop, err = importGraph(stdout, bin, *dir, *graph, *server, n); err != nil {
			return err
		}
		defer drop()
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var extra []string
	if *replica != "" {
		extra = []string{"-db-replica", *replica}
	}
	srv, url, err := startServer(ctx, bin, dbPath, extra...)
	if err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()

	w, err := prepareWorkload(url, dbPath, n)
	if err != nil {
		return err
	}
	levels := []int{}
	for _, c := range strings.Split(*concs, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			return fmt.Errorf("bad -c: %w", err)
		}
		levels = append(levels, v)
	}
	var selected []query
	for _, q := range w.queries {
		if *only == "" || slices.Contains(strings.Split(*only, ","), q.name) {
			selected = append(selected, q)
		}
	}
	// Warm the server's caches and prepared statements with every query
	// first, so that the first row measured is not the cold one.
	for _, q := range selected {
		drive(url, q, 8, 500*time.Millisecond, srv.Process.Pid)
	}
	fmt.Fprintf(stdout, "| query | conc | req/s | p50 ms | p99 ms | errors | SQL/req | server RSS MB | server CPU ms/req |\n")
	fmt.Fprintf(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, q := range selected {
		for _, c := range levels {
			r := drive(url, q, c, *duration, srv.Process.Pid)
			fmt.Fprintf(stdout, "| %s | %d | %.0f | %.2f | %.2f | %d | %.1f | %.0f | %.2f |\n",
				q.name, c, r.rps, r.p50, r.p99, r.errors, r.sqlPerReq, r.rssMB, r.cpuMS)
		}
	}
	return nil
}

// importGraph imports a graph of n users into a new database, a SQLite
// file in dir or, with server, a PostgreSQL database there, and returns
// the database and what drops it. The graph is graph's CSV files, or
// generated into dir when graph is empty.
func importGraph(stdout io.Writer, bin, dir, graph, server string, n int) (string, func(), error) {
	if graph == "" {
		gst, err := generate(n, 1, dir)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(stdout, "graph: %d users, %d follows, most followed has %d followers\n\n", n, gst.follows, gst.topFollowers)
		graph = dir
	}
	dbPath, drop := filepath.Join(dir, "bench.db"), func() {}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(dbPath + suffix)
	}
	if server != "" {
		var err error
		if drop, dbPath, err = newPostgresDatabase(server); err != nil {
			return "", nil, err
		}
	}
	start := time.Now()
	imp := exec.Command(bin, "import", "-db", dbPath, "-users", filepath.Join(graph, "users.csv"), "-follows", filepath.Join(graph, "follows.csv"))
	out, err := imp.CombinedOutput()
	if err != nil {
		drop()
		return "", nil, fmt.Errorf("import: %v\n%s", err, out)
	}
	fmt.Fprintf(stdout, "import: %s (%.1fs wall)\n\n", importSummary(out), time.Since(start).Seconds())
	return dbPath, drop, nil
}

// importSummary is import's line that counts what it imported, or its
// last line.
func importSummary(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "imported ") {
			return l
		}
	}
	return lines[len(lines)-1]
}

func startServer(ctx context.Context, bin, dbPath string, extra ...string) (*exec.Cmd, string, error) {
	// Every client is on this host, so the per-address write limit would
	// measure itself rather than the writes.
	args := append([]string{"-db", dbPath, "-addr", "127.0.0.1:0", "-debug", "-secret", benchSecret, "-rate-mutations", "off"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	urlc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`url=(http://\S+)/graphql`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
	}()
	select {
	case u := <-urlc:
		return cmd, u, nil
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return nil, "", errors.New("server did not start")
	}
}

// query is one benchmark request shape; vars makes each request's
// variables and token, given a client number and a random source.
type query struct {
	name, text string
	vars       func(client int, rng *rand.Rand) (map[string]any, string)
}

type workload struct {
	queries []query
}

// benchDatabase is the PostgreSQL database runLoad makes with -db.
const benchDatabase = "follows_bench"

// newPostgresDatabase makes benchDatabase anew on the server that admin
// names, and returns its DSN and what drops it.
func newPostgresDatabase(admin string) (drop func(), dsn string, err error) {
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, "", fmt.Errorf("-db must be a postgres:// URL: %q", admin)
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return nil, "", err
	}
	for _, q := range []string{`DROP DATABASE IF EXISTS ` + benchDatabase + ` WITH (FORCE)`, `CREATE DATABASE ` + benchDatabase} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, "", fmt.Errorf("%s on %s: %w", q, u.Redacted(), err)
		}
	}
	u.Path = "/" + benchDatabase
	return func() {
		db.Exec(`DROP DATABASE IF EXISTS ` + benchDatabase + ` WITH (FORCE)`)
		db.Close()
	}, u.String(), nil
}

// openRaw opens the bench's database beside the server, read-only where
// the driver can say so.
func openRaw(dsn string) (*sql.DB, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return sql.Open("pgx", dsn)
	}
	return sql.Open("sqlite", dsn+"?mode=ro")
}

// manyViewers is how many different viewers Q4m asks suggestions for, one
// after another, as the side-by-side harness's q4m_suggestions_many does:
// more viewers than any cache of one viewer's lists holds.
const manyViewers = 3000

func prepareWorkload(url, dbPath string, n int) (*workload, error) {
	raw, err := openRaw(dbPath)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	// The names are quoted as PostgreSQL needs them; SQLite reads them
	// the same.
	var top int64
	var topFollowers int
	if err := raw.QueryRow(`SELECT "Id", "FollowerCount" FROM "Users" ORDER BY "FollowerCount" DESC LIMIT 1`).Scan(&top, &topFollowers); err != nil {
		return nil, err
	}
	// Typical users: following about the median, followed by few. Their
	// stamps let the benchmark sign tokens for them.
	var typical []int64
	stamps := map[int64]string{}
	rows, err := raw.Query(`SELECT "Id", "SecurityStamp" FROM "Users" WHERE "FollowingCount" BETWEEN 15 AND 25 AND "FollowerCount" BETWEEN 5 AND 50 ORDER BY "Id" LIMIT 200`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var stamp string
		rows.Scan(&id, &stamp)
		typical = append(typical, id)
		stamps[id] = stamp
	}
	rows.Close()
	if len(typical) == 0 {
		return nil, errors.New("no typical users found")
	}
	var maxID int64
	raw.QueryRow(`SELECT MAX("Id") FROM "Users"`).Scan(&maxID)
	viewers, err := spreadViewers(raw, maxID, stamps)
	if err != nil {
		return nil, err
	}

	// A quarter of the users deep: 25,000 on the large graph, 250,000 on
	// xlarge; most of the way down on a small one.
	depth := min(n/4, topFollowers*8/10/100*100)
	deep, err := cursorAt(url, top, depth)
	if err != nil {
		return nil, err
	}
	var turn atomic.Int64
	usersCursors, err := usersPages(url, 20)
	if err != nil {
		return nil, err
	}
	tokens, err := auth.NewTokens([]byte(benchSecret), time.Hour)
	if err != nil {
		return nil, err
	}
	pick := func(rng *rand.Rand) int64 { return typical[rng.IntN(len(typical))] }
	tokenOf := func(id int64) string { return tokens.Mint(id, stamps[id]) }
	idVars := func(id int64) map[string]any { return map[string]any{"id": strconv.FormatInt(id, 10)} }

	const profile = `query($id: ID) { user(id: $id) { name followerCount followingCount followers(first: 20) { nodes { name } } } }`
	const followersAfter = `query($id: ID, $after: String) { user(id: $id) { followers(first: 20, after: $after) { nodes { name } pageInfo { endCursor } } } }`
	w := &workload{queries: []query{
		{"Q1 profile (typical)", profile, func(_ int, rng *rand.Rand) (map[string]any, string) { return idVars(pick(rng)), "" }},
		{"Q1 profile (most followed)", profile, func(int, *rand.Rand) (map[string]any, string) { return idVars(top), "" }},
		{"Q2 fanout users(50)", `query($after: String) { users(first: 50, after: $after) { nodes { name followerCount followers(first: 10) { nodes { name } } } } }`,
			func(_ int, rng *rand.Rand) (map[string]any, string) {
				return map[string]any{"after": usersCursors[rng.IntN(len(usersCursors))]}, ""
			}},
		{"Q3 first page (most followed)", followersAfter, func(int, *rand.Rand) (map[string]any, string) {
			return map[string]any{"id": strconv.FormatInt(top, 10), "after": nil}, ""
		}},
		{"Q3 page n/4 deep (most followed)", followersAfter, func(int, *rand.Rand) (map[string]any, string) {
			return map[string]any{"id": strconv.FormatInt(top, 10), "after": deep}, ""
		}},
		// Only the viewer may read its suggestions.
		{"Q4 suggestions (typical)", `{ viewer { suggestions(first: 10) { user { name } via } } }`,
			func(_ int, rng *rand.Rand) (map[string]any, string) { return nil, tokenOf(pick(rng)) }},
		{"Q4m suggestions (3000 viewers)", `{ viewer { suggestions(first: 10) { user { name } via } } }`,
			func(int, *rand.Rand) (map[string]any, string) {
				return nil, tokenOf(viewers[int(turn.Add(1))%len(viewers)])
			}},
		{"Q5 mutualFollows(20) (typical)", `query($id: ID) { user(id: $id) { mutualFollows(first: 20) { nodes { name } totalCount } } }`,
			func(_ int, rng *rand.Rand) (map[string]any, string) { return idVars(pick(rng)), "" }},
		{"W1 follow/unfollow", `mutation($id: ID!, $f: Boolean!) {
  f: follow(input: {userId: $id}) @include(if: $f) { alreadyFollowing }
  u: unfollow(input: {userId: $id}) @skip(if: $f) { wasFollowing } }`,
			func(client int, rng *rand.Rand) (map[string]any, string) {
				// Each client is its own user and toggles follows of a
				// few others, so both mutations do real writes.
				me := typical[client%len(typical)]
				other := 1 + rng.Int64N(maxID)
				for other == me {
					other = 1 + rng.Int64N(maxID)
				}
				return map[string]any{"id": strconv.FormatInt(other, 10), "f": rng.IntN(2) == 0}, tokenOf(me)
			}},
	}}
	return w, nil
}

// spreadViewers picks manyViewers users spread evenly over the ids (ids
// are given in an order unrelated to popularity, so they are a fair
// sample) and adds their stamps to stamps.
func spreadViewers(raw *sql.DB, maxID int64, stamps map[int64]string) ([]int64, error) {
	step := max(maxID/manyViewers, 1)
	rows, err := raw.Query(`SELECT "Id", "SecurityStamp" FROM "Users" ORDER BY "Id"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var viewers []int64
	for rows.Next() && len(viewers) < manyViewers {
		var id int64
		var stamp string
		if err := rows.Scan(&id, &stamp); err != nil {
			return nil, err
		}
		if id%step == 0 {
			viewers = append(viewers, id)
			stamps[id] = stamp
		}
	}
	return viewers, rows.Err()
}

// gql posts one request and returns its decoded body.
func gql(client *http.Client, url, token, text string, vars map[string]any) (map[string]any, error) {
	raw, err := post(client, url, token, text, vars)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

var sqlQueriesRE = regexp.MustCompile(`"sqlQueries":(\d+)`)

// post sends one request and returns its body, or an error when the
// status is not 200 or the body holds errors. The load loop reads no more
// of the body than that, so that the client costs the shared cores little.
func post(client *http.Client, url, token, text string, vars map[string]any) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{"query": text, "variables": vars})
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, raw)
	}
	if bytes.Contains(raw, []byte(`"errors":`)) {
		return nil, fmt.Errorf("errors: %.300s", raw)
	}
	return raw, nil
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// cursorAt walks a user's followers to the given depth and returns the
// cursor there.
func cursorAt(url string, user int64, depth int) (string, error) {
	var after any
	for seen := 0; seen < depth; seen += 100 {
		out, err := gql(http.DefaultClient, url, "", `query($id: ID, $after: String) { user(id: $id) { followers(first: 100, after: $after) { pageInfo { endCursor hasNextPage } } } }`,
			map[string]any{"id": strconv.FormatInt(user, 10), "after": after})
		if err != nil {
			return "", err
		}
		c, _ := dig(out, "data", "user", "followers", "pageInfo", "endCursor").(string)
		if c == "" {
			return "", fmt.Errorf("the most followed user has fewer than %d followers", depth)
		}
		after = c
	}
	return after.(string), nil
}

func usersPages(url string, n int) ([]any, error) {
	cursors := []any{nil}
	for len(cursors) < n {
		out, err := gql(http.DefaultClient, url, "", `query($after: String) { users(first: 100, after: $after) { pageInfo { endCursor } } }`,
			map[string]any{"after": cursors[len(cursors)-1]})
		if err != nil {
			return nil, err
		}
		cursors = append(cursors, dig(out, "data", "users", "pageInfo", "endCursor"))
	}
	return cursors, nil
}

type result struct {
	rps, p50, p99, sqlPerReq, rssMB, cpuMS float64
	errors                                 int
}

// drive runs a query from c clients for d and measures it, sampling the
// server's resident memory as it goes.
func drive(url string, q query, c int, d time.Duration, pid int) result {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c * 2, MaxConnsPerHost: c * 2}}
	// Each run's connections closed at its end: left idle, they added up
	// over the queries to the server's limit of connections per client
	// address, and later queries were refused with TOO_MANY_CONNECTIONS.
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var lat []time.Duration
	var errs, sqlTotal, reqs int64
	var firstErr atomic.Value
	var maxRSS atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if r := rssKB(pid); r > maxRSS.Load() {
					maxRSS.Store(r)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	cpu0 := cpuTicks(pid)
	begin := time.Now()
	for i := range c {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var mine []time.Duration
			for time.Now().Before(deadline) {
				vars, token := q.vars(i, rng)
				t := time.Now()
				raw, err := post(client, url, token, q.text, vars)
				mine = append(mine, time.Since(t))
				atomic.AddInt64(&reqs, 1)
				if err != nil {
					atomic.AddInt64(&errs, 1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if m := sqlQueriesRE.FindSubmatch(raw); m != nil {
					n, _ := strconv.Atoi(string(m[1]))
					atomic.AddInt64(&sqlTotal, int64(n))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	cpu := cpuTicks(pid) - cpu0
	close(stop)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "%s c=%d: first error: %.300s\n", q.name, c, e)
	}
	runtime.GC()
	return result{
		rps:       float64(reqs) / elapsed.Seconds(),
		p50:       pct(0.50),
		p99:       pct(0.99),
		errors:    int(errs),
		sqlPerReq: float64(sqlTotal) / float64(max(reqs-errs, 1)),
		rssMB:     float64(maxRSS.Load()) / 1024,
		cpuMS:     float64(cpu) * 1000 / clockTicks / float64(max(reqs, 1)),
	}
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times.
const clockTicks = 100

// cpuTicks reads the user and system CPU time a process has used, in
// clock ticks: on a machine shared with other work, the server's CPU per
// request is steadier than its latency.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
