package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"follows/auth"
	"follows/db"

	coderws "github.com/coder/websocket"
)

// runEvents measures live follow events: the latency from a follow
// mutation's send to its event reaching a subscriber (p50, p99), alone
// and with idle subscribers connected, and the server's memory per idle
// subscriber (VmRSS before and after they subscribe).
//
//	go run ./bench events [-db postgres://...] [-idle 1000] [-follows 300]
func runEvents(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench events", flag.ContinueOnError)
	idle := fs.Int("idle", 1000, "idle subscribers")
	follows := fs.Int("follows", 300, "follows timed in each round")
	server := fs.String("db", "", "a postgres:// URL whose role may create databases: run on a new PostgreSQL database there, "+benchDatabase+", rather than on a SQLite file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "follows-bench-events")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "follows")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("build server: %v\n%s", err, out)
	}
	dsn := filepath.Join(dir, "bench.db")
	if *server != "" {
		drop, pg, err := newPostgresDatabase(*server)
		if err != nil {
			return err
		}
		defer drop()
		dsn = pg
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	users, err := mintEventUsers(ctx, dsn, 2**follows, *idle)
	if err != nil {
		return err
	}
	// Room for every subscriber's connection beside the load's; every
	// subscriber comes from this one address, which the caps per client
	// would refuse.
	srv, url, err := startServer(ctx, bin, dsn, "-max-conns", fmt.Sprint(*idle+100), "-max-streams", fmt.Sprint(*idle+10),
		"-max-client-conns", "0", "-max-client-streams", "0", "-max-client-subscriptions", "0")
	if err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	wsURL := "ws" + strings.TrimPrefix(url, "http") + "/graphql"
	star, err := subscribe(ctx, wsURL, users.starToken)
	if err != nil {
		return err
	}
	timer := followTimer{
		client:   &http.Client{Timeout: 10 * time.Second},
		url:      url,
		starID:   users.starID,
		received: make(chan time.Time, 2**follows),
	}
	go readEvents(ctx, star, func() { timer.received <- time.Now() })
	time.Sleep(time.Second) // the subscription starts "now"

	fmt.Fprintf(stdout, "| idle subscribers | follows | p50 ms | p99 ms | server RSS MB |\n| ---: | ---: | ---: | ---: | ---: |\n")
	p50, p99, err := timer.round(users.fans[:*follows])
	if err != nil {
		return err
	}
	before := rssKB(srv.Process.Pid)
	fmt.Fprintf(stdout, "| 0 | %d | %.2f | %.2f | %.0f |\n", *follows, ms(p50), ms(p99), float64(before)/1024)

	conns := subscribeIdle(ctx, wsURL, users.idlers)
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	time.Sleep(2 * time.Second) // every subscription started, its goroutines parked
	after := rssKB(srv.Process.Pid)
	p50, p99, err = timer.round(users.fans[*follows:])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "| %d | %d | %.2f | %.2f | %.0f |\n", len(conns), *follows, ms(p50), ms(p99), float64(after)/1024)
	fmt.Fprintf(stdout, "\n%d idle subscribers: server RSS %.1f MB -> %.1f MB, %.1f KB each\n",
		len(conns), float64(before)/1024, float64(after)/1024, float64(after-before)/float64(max(len(conns), 1)))
	return nil
}

// eventUsers are the users of the events benchmark, as tokens: the star
// every fan follows, the fans (one per timed follow), and the idle
// subscribers.
type eventUsers struct {
	starID       int64
	starToken    string
	fans, idlers []string
}

// mintEventUsers makes the users beside the server, their tokens minted
// with its secret, so that sign-up's rate limit stays as it is.
func mintEventUsers(ctx context.Context, dsn string, fans, idle int) (eventUsers, error) {
	var users eventUsers
	store, err := db.Open(ctx, dsn)
	if err != nil {
		return users, err
	}
	defer store.Close()
	tokens, err := auth.NewTokens([]byte(benchSecret), time.Hour)
	if err != nil {
		return users, err
	}
	mint := func(name string) (int64, string, error) {
		u, err := store.CreateUser(ctx, name)
		return u.ID, tokens.Mint(u.ID, u.SecurityStamp), err
	}
	if users.starID, users.starToken, err = mint("star"); err != nil {
		return users, err
	}
	users.fans = make([]string, fans)
	for i := range users.fans {
		if _, users.fans[i], err = mint(fmt.Sprintf("fan%d", i)); err != nil {
			return users, err
		}
	}
	users.idlers = make([]string, idle)
	for i := range users.idlers {
		if _, users.idlers[i], err = mint(fmt.Sprintf("idle%d", i)); err != nil {
			return users, err
		}
	}
	return users, nil
}

// followTimer times follows of the star: from a follow mutation's send to
// its event arriving on received, which the star's subscription feeds.
type followTimer struct {
	client   *http.Client
	url      string
	starID   int64
	received chan time.Time
}

// round has each fan follow the star in turn, waiting for each event
// before the next follow, and gives the latencies' p50 and p99.
func (f followTimer) round(fans []string) (p50, p99 time.Duration, err error) {
	var lat []time.Duration
	for _, fan := range fans {
		start := time.Now()
		if _, err := gql(f.client, f.url, fan, `mutation($id: ID!) { follow(input: {userId: $id}) { alreadyFollowing } }`,
			map[string]any{"id": fmt.Sprint(f.starID)}); err != nil {
			return 0, 0, err
		}
		select {
		case at := <-f.received:
			lat = append(lat, at.Sub(start))
		case <-time.After(10 * time.Second):
			return 0, 0, fmt.Errorf("no event within 10s")
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// subscribeIdle subscribes every idler, at most 50 dialling at once, and
// returns the connections that opened; one that fails is reported on
// stderr and left out, so the figures count only those subscribed.
func subscribeIdle(ctx context.Context, wsURL string, idlers []string) []*coderws.Conn {
	var mu sync.Mutex
	var conns []*coderws.Conn
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for _, tok := range idlers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := subscribe(ctx, wsURL, tok)
			if err != nil {
				fmt.Fprintln(os.Stderr, "subscribe:", err)
				return
			}
			go readEvents(ctx, c, func() {})
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	return conns
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// readEvents reads a subscriber's messages until its connection ends,
// telling next of each event and answering the server's pings, as
// graphql-ws does.
func readEvents(ctx context.Context, c *coderws.Conn, next func()) {
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		switch {
		case strings.Contains(string(b), `"type":"next"`):
			next()
		case strings.Contains(string(b), `"type":"ping"`):
			c.Write(ctx, coderws.MessageText, []byte(`{"type":"pong"}`))
		}
	}
}

// subscribe opens a graphql-transport-ws connection signed in with token
// and starts followEvents from now.
func subscribe(ctx context.Context, url, token string) (*coderws.Conn, error) {
	c, _, err := coderws.Dial(ctx, url, &coderws.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	send := func(v any) error {
		b, _ := json.Marshal(v)
		return c.Write(ctx, coderws.MessageText, b)
	}
	if err := send(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}); err != nil {
		return nil, err
	}
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), "connection_ack") {
		return nil, fmt.Errorf("connection_init: %s %v", b, err)
	}
	err = send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { followEvents { cursor kind follower { name } } }`}})
	return c, err
}
