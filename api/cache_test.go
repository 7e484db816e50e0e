package api

import (
	"context"
	"strings"
	"testing"
)

// The caches hold what was accepted, within their bytes as well as their
// entries, and ignore what gqlgen adds before the limits have run.
func TestAcceptedCache(t *testing.T) {
	ctx := context.Background()
	c := newAcceptedCache[string](10, 1000)
	c.Add(ctx, "junk", strings.Repeat("x", 500))
	if _, ok := c.Get(ctx, "junk"); ok {
		t.Error("Add kept an entry that was not accepted")
	}
	for _, k := range []string{"a", "b", "c"} {
		c.accept(k, k, 399) // 400 bytes with the key
	}
	if n, bytes := c.size(); n != 2 || bytes != 800 {
		t.Errorf("%d entries of %d bytes, want 2 of 800", n, bytes)
	}
	if _, ok := c.Get(ctx, "a"); ok {
		t.Error("the least recently used entry outlived the bytes")
	}
	c.accept("c", "c", 99) // a new weight replaces the old one
	if n, bytes := c.size(); n != 2 || bytes != 500 {
		t.Errorf("after replacing: %d entries of %d bytes, want 2 of 500", n, bytes)
	}
	c.accept("huge", "", 1000)
	if _, ok := c.Get(ctx, "huge"); ok {
		t.Error("an entry heavier than the cache was kept")
	}
	if _, ok := c.Get(ctx, "b"); !ok {
		t.Error("an entry heavier than the cache evicted the others")
	}
	for i := range 20 {
		c.accept(strings.Repeat("k", i+1), "", 0)
	}
	if n, _ := c.size(); n != 10 {
		t.Errorf("%d entries, want at most 10", n)
	}
}
