package graphiql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"follows/api/apitest"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium. Without it the browser test skips,
// saying so, except in CI (CI=true), where .ci/run installs it and a skip
// would hide a broken set-up.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED under -short: GraphiQL in headless Chromium is long; it runs without -short")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; .ci/run installs Debian's chromium package")
		}
		t.Skip("SKIPPED: Debian's chromium is not installed (apt-get install chromium); CI installs it and runs this test")
	}
	return path
}

// GraphiQL, served from the binary's own assets, runs a query through its
// UI in headless Chromium, with every request the page makes going to the
// server itself. The screenshot is kept in artifacts/graphiql.png at the
// repository's root.
func TestGraphiQLInBrowser(t *testing.T) {
	exe := chromium(t)
	s := apitest.Start(t)
	if _, err := s.Store.LoadSample(context.Background()); err != nil {
		t.Fatal(err)
	}
	server, _ := url.Parse(s.URL)

	ctx := browser(t, exe)

	var result string
	var shot []byte
	var fetched []string
	err := chromedp.Run(ctx,
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible(".graphiql-execute-button", chromedp.ByQuery),
		chromedp.Click(".graphiql-execute-button", chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const r = document.querySelector(".result-window, .graphiql-response");
			return r && r.innerText.includes("followerCount") ? r.innerText : null;
		})()`, &result, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.FullScreenshot(&shot, 100),
		// Every script, style and request the page made, as the browser
		// recorded them.
		chromedp.Evaluate(`performance.getEntriesByType("resource").map(e => e.name)`, &fetched),
	)
	if err != nil {
		t.Fatalf("GraphiQL in Chromium: %v", err)
	}
	artifacts := filepath.Join("..", "artifacts")
	os.MkdirAll(artifacts, 0o755)
	png := filepath.Join(artifacts, "graphiql.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", png)

	for _, want := range []string{`"name": "alice"`, `"name": "bob"`, `"hasNextPage": false`} {
		if !strings.Contains(result, want) {
			t.Errorf("the result pane does not show %s:\n%s", want, result)
		}
	}
	var local int
	for _, f := range fetched {
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "data" && u.Host != server.Host) {
			t.Errorf("the page fetched %s, not from the server", f)
		}
		if strings.Contains(f, "/graphiql/graphiql.min.js") || strings.Contains(f, "/graphql") {
			local++
		}
	}
	if local < 2 {
		t.Errorf("the page's recorded fetches lack its script or its query: %v", fetched)
	}
}

// browser starts headless Chromium for a test, ended when it ends, and
// returns its context, which times out after 90 s.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	// Chromium's helpers may still write to their profile for a moment
	// after it exits, so the profile is removed without t.TempDir's check.
	profile, err := os.MkdirTemp("", "follows-chromium")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1400, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	// The CDP bindings are older than this Chromium and cannot decode a few
	// network events this test does not use; their complaints are muted.
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(string, ...any) {}))
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	return ctx
}

// GraphiQL's fetcher runs a subscription, as the page gives it one (with
// the Headers editor's headers and the parsed document): the events come
// over server-sent events as they happen.
func TestGraphiQLRunsSubscriptions(t *testing.T) {
	exe := chromium(t)
	s := apitest.Start(t)
	ann, bob, cat := s.CreateUser("ann"), s.CreateUser("bob"), s.CreateUser("cat")
	s.Follow(cat, ann)
	after := s.EventCursor(ann)
	ctx := browser(t, exe)
	start := fmt.Sprintf(`(() => {
		const events = fetcher(
			{ query: %q, variables: { after: %q } },
			{ headers: { Authorization: "Bearer %s" },
			  documentAST: { definitions: [{ kind: "OperationDefinition", operation: "subscription" }] } },
		)[Symbol.asyncIterator]();
		window.firstEvent = events.next().then((r) => JSON.stringify(r.value));
		return true;
	})()`, apitest.FollowEventsSubscription, after, ann.Token)
	var started bool
	var first string
	err := chromedp.Run(ctx,
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible(".graphiql-execute-button", chromedp.ByQuery),
		chromedp.Evaluate(start, &started),
	)
	if err != nil {
		t.Fatalf("GraphiQL in Chromium: %v", err)
	}
	s.Follow(bob, ann)
	err = chromedp.Run(ctx, chromedp.Evaluate(`window.firstEvent`, &first, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	if err != nil {
		t.Fatalf("the subscription's first event: %v", err)
	}
	var r struct {
		Data struct{ FollowEvents apitest.FollowEvent }
	}
	if err := json.Unmarshal([]byte(first), &r); err != nil {
		t.Fatalf("%s: %v", first, err)
	}
	if got := r.Data.FollowEvents.String(); got != "FOLLOWED bob->ann" {
		t.Errorf("GraphiQL received %s (%s), want FOLLOWED bob->ann", got, first)
	}
}
