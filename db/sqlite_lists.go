package db

import (
	"strconv"
	"strings"
	"sync"
)

// SQLite's list statements: the followers and following pages
// (sqliteListBranches, batched by pagesQuery) and their batching.

// The list statements answer one query for each of many users in a single
// statement: one UNION ALL branch per user, each of which seeks that user's
// index range and stops at its LIMIT. Unlike ROW_NUMBER() over partitions,
// the cost does not grow with the size of a popular user's list. Each
// branch's first column is the position of its query in the batch.
//
// A branch compares the cursors its page gives, and only those; see
// pageBranch for how its LIMIT is written. A backward page's branch reads
// the index up from its cursor (see listSeeks), as cheaply as a forward
// page's reads it down.
//
// Lists leave out deactivated users. They read only what the keyset index
// covers (a follow's settings are looked up apart, for the viewer's own
// follows): reading Muted here made the first page of fifty lists about
// four times slower, a table lookup per row
// (docs/decisions/list-statements.md).
var sqliteListBranches = fillLists(`SELECT * FROM (
  SELECT ? AS k, {e}.CreatedAt, ` + userColumns + `
  FROM {table} AS {e} JOIN ` + activeUser("u", "{e}.{other}") + `
  WHERE {e}.{owner} = ?/*from*/ AND ({e}.CreatedAt, {e}.{other}) {from} (?, ?)/*end*//*to*/ AND ({e}.CreatedAt, {e}.{other}) {to} (?, ?)/*end*/{also}
  ORDER BY {e}.CreatedAt {order}, {e}.{other} {order} LIMIT /*limit*/)`)

// limitBuckets are the LIMITs written into pages after the first: the
// smallest that holds first+1 rows, the extra rows dropped in Go.
var limitBuckets = []int{11, 21, 51, 101}

// pageBranch makes a list branch's text, comparing the cursor a page
// starts at (from), the one it stops at (to), both or neither. A branch
// that compares none binds its LIMIT. One that compares a cursor has its
// LIMIT written in as one of limitBuckets (our constant, never a client's
// value): SQLite re-prepares, on every run, a statement whose bound LIMIT
// meets a bound range on an index, which for fifty branches tripled its
// cost (docs/decisions/list-statements.md).
func pageBranch(tmpl string, from, to bool, limit int) string {
	t := section(section(tmpl, "from", from), "to", to)
	if !from && !to {
		return strings.Replace(t, "/*limit*/", "?", 1)
	}
	return strings.Replace(t, "/*limit*/", strconv.Itoa(limit), 1)
}

// section keeps, or cuts out, the text of tmpl between /*name*/ and the
// /*end*/ after it.
func section(tmpl, name string, keep bool) string {
	head, rest, _ := strings.Cut(tmpl, "/*"+name+"*/")
	body, tail, _ := strings.Cut(rest, "/*end*/")
	if keep {
		return head + body + tail
	}
	return head + tail
}

// pagesQuery answers a batch of page queries that go one way with one
// UNION ALL statement of per-user branches (see pageBranch), padded to a
// batch size.
func (d *sqliteDialect) pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	// Every branch compares a cursor at an end of its range when any page
	// of the batch gives one there, a page that gives none comparing the
	// one past that end of its list; and then the LIMIT is written in.
	from, to, limit := false, false, 0
	for _, q := range qs {
		f, t := q.cursors()
		from = from || !f.IsZero()
		to = to || !t.IsZero()
		limit = max(limit, q.size()+1)
	}
	if from || to {
		for _, b := range limitBuckets {
			if b >= limit {
				limit = b
				break
			}
		}
	}
	args := func(k int, q PageQuery) []any {
		a := []any{k, q.User}
		f, t := q.ends()
		if from {
			a = append(a, d.timeArg(f.At), f.ID)
		}
		if to {
			a = append(a, d.timeArg(t.At), t.ID)
		}
		if !from && !to {
			a = append(a, q.size()+1)
		}
		return a
	}
	return unionBatch(pageBranch(sqliteListBranches[way][kind], from, to, limit), len(qs),
		func(i int) []any { return args(i, qs[i]) }, args(-1, PageQuery{}))
}

// batchSizes are the branch counts a batch statement is padded to, so that
// a handful of statement texts, each prepared once, serve every batch.
var batchSizes = []int{1, 2, 4, 8, 16, 32, 64, 128}

// unionBatch makes one statement of n branches, padded with branches that
// match nothing up to a batch size, and its parameters: args gives a
// query's, pad a padding branch's.
func unionBatch(branch string, n int, args func(i int) []any, pad []any) (string, []any) {
	size := batchSizes[len(batchSizes)-1]
	for _, b := range batchSizes {
		if b >= n {
			size = b
			break
		}
	}
	var params []any
	for i := range size {
		if i < n {
			params = append(params, args(i)...)
		} else {
			params = append(params, pad...)
		}
	}
	return unionText(branch, size), params
}

type unionKey struct {
	branch string
	size   int
}

var unionTexts sync.Map // unionKey -> string

// unionText is size copies of branch joined by UNION ALL, built once.
func unionText(branch string, size int) string {
	k := unionKey{branch, size}
	if t, ok := unionTexts.Load(k); ok {
		return t.(string)
	}
	t := strings.TrimSuffix(strings.Repeat(branch+"\nUNION ALL\n", size), "\nUNION ALL\n")
	unionTexts.Store(k, t)
	return t
}
