package sqlitebtree

import (
	"slices"
	"testing"
)

// New pages skip the page holding byte 1,073,741,824, which SQLite never
// uses.
func TestNewPagesSkipTheLockPage(t *testing.T) {
	h := Header{PageSize: 4096}
	lock := h.LockPage()
	if lock != 262145 {
		t.Fatalf("lock page %d, want 262145", lock)
	}
	w := &pageWriter{h: h, first: lock - 2}
	var got []uint32
	for slot := range 4 {
		got = append(got, w.pageNo(slot))
	}
	if want := []uint32{lock - 2, lock - 1, lock + 1, lock + 2}; !slices.Equal(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	if w := (&pageWriter{h: h, first: lock + 5}); w.pageNo(0) != lock+5 {
		t.Errorf("a page past the lock page moved to %d", w.pageNo(0))
	}
}
