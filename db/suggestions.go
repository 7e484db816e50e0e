package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Suggestions returns, for each query, the users followed by the most of
// the people the user follows, best first by bySuggestionRank: never the
// user, nor anyone it follows already, blocks or is blocked by, nor a
// deactivated user; only active followees count, and only as many of
// them, newest first, as SuggestionBudget allows (then each suggestion
// says Sampled).
//
// A dialect either ranks them in SQL (sqlSuggester), or reads their data
// as id lists (listSuggester) and the store counts, excludes and ranks
// here (rankedSuggestions). It reads the users along, if any, with its
// first statement.
func (s *Store) Suggestions(ctx context.Context, qs []SuggestionQuery, along *Along) ([][]Suggestion, error) {
	out := make([][]Suggestion, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	var err error
	switch d := s.d.(type) {
	case listSuggester:
		err = s.rankedSuggestions(ctx, d, qs, out, along)
	case sqlSuggester:
		err = s.sqlSuggestions(ctx, d, qs, out, along)
	default:
		err = fmt.Errorf("not built for %s", s.d.name())
	}
	if err != nil {
		return nil, fmt.Errorf("load suggestions: %w", err)
	}
	return out, nil
}

// bySuggestionRank orders suggestions' candidates, with their names, best
// first: followed by more of the people the user follows, then by name,
// then by id. Names compare byte by byte, as SQLite's BINARY collation
// (Users.Name's) compares them. The dialects that rank in SQL say the
// same in their ORDER BY Via DESC, Name, Id, names in their own collation.
func bySuggestionRank(a, b namedCandidate) int {
	if c := cmp.Compare(b.via, a.via); c != 0 {
		return c
	}
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// sqlSuggestions runs the dialect's statement that ranks suggestions.
func (s *Store) sqlSuggestions(ctx context.Context, d sqlSuggester, qs []SuggestionQuery, out [][]Suggestion, along *Along) error {
	text, args := d.suggestionsQuery(qs, s.budget())
	return s.scanAlong(ctx, text, args, along, func(rows *rows) error {
		var i int
		var sg Suggestion
		if err := rows.Scan(append([]any{&i, &sg.Sampled, &sg.Via}, sg.User.scanDest()...)...); err != nil {
			return err
		}
		out[i] = append(out[i], sg)
		return nil
	})
}

// appendIDs appends the ids of a comma-separated list to dst. Ids of up
// to 18 digits, which every row id is, are read digit by digit:
// strconv.ParseInt, with its signs, bases and underscores, was a visible
// share of the suggestions query's CPU under load, for the hundreds of
// ids of a typical call (docs/decisions/suggestions-ranked-in-go.md). It
// reads anything else, or refuses it.
func appendIDs(dst []int64, list string) ([]int64, error) {
	for len(list) > 0 {
		field := list
		if i := strings.IndexByte(list, ','); i >= 0 {
			field, list = list[:i], list[i+1:]
		} else {
			list = ""
		}
		id, ok := int64(0), len(field) > 0 && len(field) <= 18
		for i := range len(field) {
			c := field[i]
			if c < '0' || c > '9' {
				ok = false
				break
			}
			id = id*10 + int64(c-'0')
		}
		if !ok {
			var err error
			if id, err = strconv.ParseInt(field, 10, 64); err != nil {
				return dst, fmt.Errorf("read an id list: %w", err)
			}
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// tally is one query's counts: the ids read for it, then its candidates
// on their way to the answer.
type tally struct {
	// via holds an id for each follow by the people the user follows,
	// those the budget takes (the ids of heads' lists); exclude the ids
	// suggestions leave out; sampled whether the budget left some of the
	// people it follows out.
	via, exclude []int64
	sampled      bool
	// runs are where each head's list ends in via: each list is sorted
	// (codeList), so via is sorted by merging them (see count). spare is
	// the merge's other buffer.
	runs  []int
	spare []int64
	// heads are the lists the budget takes: those of the people the user
	// follows, newest first.
	heads []listHead
	// below are the candidates not yet known to be among the best,
	// pending those that may be (see promote), named those of pending
	// whose names are known, ranked; short says that users read were
	// deactivated or gone, so every pending candidate is to be read.
	below, pending []candidate
	named          []namedCandidate
	short          bool
}

// namedCandidate is a candidate with its user's name, for ranking.
type namedCandidate struct {
	candidate
	name string
}

// candidate is a user suggestions may name, by id, with its via count.
type candidate struct {
	id  int64
	via int
}

var tallies = sync.Pool{New: func() any {
	return &tally{via: make([]int64, 0, 1024)}
}}

func (t *tally) reset() {
	t.via, t.exclude, t.sampled, t.runs = t.via[:0], t.exclude[:0], false, t.runs[:0]
	// Pooled tallies keep no held list or name alive once dropped.
	clear(t.heads)
	t.heads = t.heads[:0]
	clear(t.named)
	t.below, t.pending, t.named, t.short = t.below[:0], t.pending[:0], t.named[:0], false
}

// count makes the candidates: each id of via once, with how many times it
// came, unless excluded. Sorting the ids and counting runs of equal ones,
// with the candidates as (id, via) pairs, took about half the time of a
// hash map's increments and candidates as whole Suggestions, for a
// typical user's ids; and merging the lists, sorted each, a third of
// sorting them all (docs/decisions/suggestions-ranked-in-go.md).
func (t *tally) count() {
	t.via, t.spare = mergeRuns(t.via, t.runs, t.spare)
	slices.Sort(t.exclude)
	ex := t.exclude
	for i := 0; i < len(t.via); {
		id, j := t.via[i], i+1
		for j < len(t.via) && t.via[j] == id {
			j++
		}
		for len(ex) > 0 && ex[0] < id {
			ex = ex[1:]
		}
		if len(ex) == 0 || ex[0] != id {
			t.below = append(t.below, candidate{id: id, via: j - i})
		}
		i = j
	}
}

// mergeRuns sorts ids, made of sorted runs that end at the offsets ends
// gives (the last at len(ids)), by merging neighbouring runs until one is
// left, through buf, a buffer of any length; ends is overwritten. It
// returns the sorted ids and the other buffer, for the next call.
func mergeRuns(ids []int64, ends []int, buf []int64) (sorted, spare []int64) {
	buf = slices.Grow(buf[:0], len(ids))[:len(ids)]
	for len(ends) > 1 {
		merged := ends[:0] // written behind what is read
		start := 0
		for i := 0; i < len(ends); i += 2 {
			if i+1 == len(ends) {
				copy(buf[start:ends[i]], ids[start:ends[i]])
				merged = append(merged, ends[i])
				break
			}
			mergeInto(buf[start:ends[i+1]], ids[start:ends[i]], ids[ends[i]:ends[i+1]])
			merged = append(merged, ends[i+1])
			start = ends[i+1]
		}
		ends = merged
		ids, buf = buf, ids
	}
	return ids, buf
}

// mergeInto merges the sorted a and b into dst, len(a)+len(b) long.
func mergeInto(dst, a, b []int64) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// rankedSuggestions answers the batch with one statement that reads, per
// user, the people it follows that the budget takes, each with the
// version of its own following list, and the ids to leave out
// (suggestionData); the lists it finds held at those versions it takes
// from memory, and reads the others in one statement (followingLists,
// see followLists). It counts the ids of those lists, promotes the
// candidates that can be among each query's best (those with at least the
// via count of its first-th best, all tied at that count included, since
// names break ties), and ranks them (rankCandidates), reading the rows of
// only the users it names and of those whose names it does not hold.
func (s *Store) rankedSuggestions(ctx context.Context, d listSuggester, qs []SuggestionQuery, out [][]Suggestion, along *Along) error {
	ts := make([]*tally, len(qs))
	for i := range ts {
		ts[i] = tallies.Get().(*tally)
		defer func(t *tally) { t.reset(); tallies.Put(t) }(ts[i])
	}
	text, args := d.suggestionData(qs, s.budget())
	var renames int64
	err := s.scanAlong(ctx, text, args, along, func(rows *rows) error {
		var k int
		var n int64
		// A string: the driver's text comes as one, which a RawBytes
		// would copy again.
		var list sql.NullString
		err := rows.Scan(&k, &n, &list)
		if err != nil {
			return err
		}
		switch {
		case k >= 0 && k < len(qs):
			ts[k].sampled = n != 0
			ts[k].heads, err = appendHeads(ts[k].heads, list.String)
		case k < 0 && -1-k < len(qs):
			renames = n
			ts[-1-k].exclude, err = appendIDs(ts[-1-k].exclude, list.String)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := s.readLists(ctx, d, ts); err != nil {
		return err
	}
	for i, q := range qs {
		t := ts[i]
		for _, h := range t.heads {
			t.via = appendList(t.via, h.ids)
			t.runs = append(t.runs, len(t.via))
		}
		t.exclude = append(t.exclude, q.User)
		t.count()
		t.promote(q.First)
	}
	return s.rankCandidates(ctx, d, qs, ts, out, renames)
}

// readLists finds the lists of the tallies' heads: held ones from
// s.lists, the others read in one statement and held for the next call.
// A list read here may be newer than the version its head was read at
// (a follow committed between the two statements); the call uses it, as
// a call that started a moment later would have.
func (s *Store) readLists(ctx context.Context, d listSuggester, ts []*tally) error {
	var missing []int64
	for _, t := range ts {
		missing = lookupLists(s.lists, t.heads, missing)
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	read := make(map[int64][]byte, len(missing))
	var buf []int64
	err := s.scanBatch(ctx, d.followingLists(), []any{idList(missing)}, func(rows *rows) error {
		var user, version int64
		var list sql.NullString
		if err := rows.Scan(&user, &version, &list); err != nil {
			return err
		}
		var err error
		if buf, err = appendIDs(buf[:0], list.String); err != nil {
			return err
		}
		coded := codeList(buf)
		read[user] = coded
		s.lists.put(user, version, coded)
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range ts {
		for i := range t.heads {
			if h := &t.heads[i]; !h.ok {
				h.ids = read[h.user] // none for a user deleted meanwhile
			}
		}
	}
	return nil
}

// appendHeads appends the heads of a comma-separated list of
// user:version pairs to dst.
func appendHeads(dst []listHead, list string) ([]listHead, error) {
	if list == "" {
		return dst, nil
	}
	for field := range strings.SplitSeq(list, ",") {
		user, version, ok := strings.Cut(field, ":")
		if !ok {
			return dst, fmt.Errorf("read a list version: %q has no version", field)
		}
		var h listHead
		var err error
		if h.user, err = strconv.ParseInt(user, 10, 64); err != nil {
			return dst, fmt.Errorf("read a list version: %w", err)
		}
		if h.version, err = strconv.ParseInt(version, 10, 64); err != nil {
			return dst, fmt.Errorf("read a list version: %w", err)
		}
		dst = append(dst, h)
	}
	return dst, nil
}

// promote moves from below to pending the candidates that can be among
// the first best, all of them for a negative first: those whose via is at
// least the first-th highest.
func (t *tally) promote(first int) {
	if first == 0 {
		return
	}
	cut := 0 // the lowest via promoted
	if first > 0 && first < len(t.below) {
		// How many candidates have each via; then, from the highest via
		// down, the one at which first are counted.
		var hist []int
		for _, c := range t.below {
			if c.via >= len(hist) {
				hist = append(hist, make([]int, c.via+1-len(hist))...)
			}
			hist[c.via]++
		}
		for n, v := 0, len(hist)-1; n < first; v-- {
			n += hist[v]
			cut = v
		}
	}
	kept := t.below[:0]
	for _, c := range t.below {
		if c.via >= cut {
			t.pending = append(t.pending, c)
		} else {
			kept = append(kept, c)
		}
	}
	t.below = kept
}

// rankCandidates ranks each query's pending candidates by via, name and
// id, and puts its first best, active users all, in out. The names come
// from memory where they are held at the count the data statement read
// (renames, see UserRenames, which counts deactivations too), and from
// the users' rows otherwise. Names read are held for the next call, at
// the count read in the same statement, and only of active users: a name
// held at the count read is that of a user that was active, with that
// name, when the data was read. So a brief query (SuggestionQuery.Brief)
// reads the row of only a user whose name is not held; any other reads
// its first users' rows too, for their counts. Where users read were
// deactivated or gone, a second round reads all of that query's
// candidates, those below the cut too if it is short of its first.
func (s *Store) rankCandidates(ctx context.Context, d listSuggester, qs []SuggestionQuery, ts []*tally, out [][]Suggestion, renames int64) error {
	read := map[int64]*User{} // users read by this call; nil: deactivated or gone
	var need []int64
	for range 4 {
		need = need[:0]
		s.names.with(func(get func(key, version int64) (string, bool)) {
			for i, q := range qs {
				need = ts[i].rank(q, read, renames, get, need)
			}
		})
		if len(need) == 0 {
			break
		}
		slices.Sort(need)
		need = slices.Compact(need)
		for _, id := range need {
			read[id] = nil
		}
		err := s.scanBatch(ctx, d.candidateUsers(), []any{idList(need)}, func(rows *rows) error {
			var u User
			var version int64
			if err := rows.Scan(append(u.scanDest(), &version)...); err != nil {
				return err
			}
			if !u.Deactivated {
				read[u.ID] = &u
				s.names.put(u.ID, version, u.Name)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i, q := range qs {
		t := ts[i]
		out[i] = nil
		for _, c := range t.named {
			if len(out[i]) == q.First {
				break
			}
			u, ok := read[c.id]
			if !ok && q.Brief {
				u = &User{ID: c.id, Name: c.name} // held at the count read: active then
			}
			if u == nil {
				return fmt.Errorf("rank suggestions: user %d ranked unread", c.id) // rank's loop reads them first
			}
			out[i] = append(out[i], Suggestion{User: *u, Via: c.via, Sampled: t.sampled})
		}
	}
	return nil
}

// rank ranks the pending candidates whose names are known (read by this
// call, or held at renames), and appends to need the ids whose rows must
// be read before the ranking can stand: those with no known name, and,
// unless the query is brief, those among the first best not read yet;
// after a deactivated or gone user, all of them not read. None, and
// t.named is the answer's order.
func (t *tally) rank(q SuggestionQuery, read map[int64]*User, renames int64, get func(key, version int64) (string, bool), need []int64) []int64 {
	first := q.First
	start := len(need)
	t.named = t.named[:0]
	dropped := false
	for _, c := range t.pending {
		if u, ok := read[c.id]; ok {
			if u == nil {
				dropped = true
			} else {
				t.named = append(t.named, namedCandidate{c, u.Name})
			}
			continue
		}
		if !t.short {
			if name, ok := get(c.id, renames); ok {
				t.named = append(t.named, namedCandidate{c, name})
				continue
			}
		}
		need = append(need, c.id)
	}
	if dropped && !t.short {
		// Some that were read are gone: read every candidate that can
		// be among the first, all of them if they are now too few.
		t.short = true
		if first < 0 || len(t.named) < first {
			t.promote(-1)
		}
		return t.rank(q, read, renames, get, need[:start])
	}
	slices.SortFunc(t.named, bySuggestionRank)
	if q.Brief {
		return need
	}
	for i, c := range t.named {
		if first >= 0 && i == first {
			break
		}
		if _, ok := read[c.id]; !ok {
			need = append(need, c.id)
		}
	}
	return need
}

// budget is the store's SuggestionBudget: the constant, or a test's.
func (s *Store) budget() int {
	if s.suggestionBudget > 0 {
		return s.suggestionBudget
	}
	return SuggestionBudget
}
