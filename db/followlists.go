package db

import (
	"encoding/binary"
	"slices"
)

// followLists are users' following lists (the ids of the users each
// follows) kept in memory for suggestions, each with the FollowingVersion
// it was read at. Suggestions read the versions of the lists they need
// with the rest of their data, take a held list whose version is the one
// read, and read the others, each with its version, in one statement: a
// list and its version come from one statement, one snapshot, so they
// match, and a held list is one the database held at that version. The
// count triggers bump a user's version in the same UPDATE that changes its
// following count, whoever writes, and whatever sets the counts around
// the triggers bumps it too (bumpFollowingVersion), so a list that changed
// is never taken for one that did not. Nothing is needed between server
// instances: each keeps its own lists, and each asks the database.
//
// Why hold them: under 3,000 different viewers in turn, a suggestions call
// read about a thousand index entries, a range for each followee, and
// SQLite's work per entry was most of the call's CPU
// (docs/decisions/cold-suggestions.md). The lists those viewers need are
// about 43,000, 1.5 million ids, which fit in a few MiB kept as
// varint-coded gaps (docs/decisions/following-versions.md).
//
// The bound is on bytes, the coded lists plus a fixed charge for each
// (see held).
type followLists = held[[]byte]

// FollowListBytes is the default bound on the lists held: the many-viewers
// workload of the benchmark harness needs about 7 MiB of it.
const FollowListBytes = 12 << 20

func newFollowLists(max int) *followLists {
	return newHeld(max, func(ids []byte) int { return len(ids) + heldCharge })
}

// heldNames are the names of active users suggestions have ranked, each
// held at the UserRenames count read with it, which renames and
// deactivations move (see rankCandidates): suggestions rank by name, and
// reading every tied candidate's row only to learn its name was most of
// what was left of a call's cost; a brief call names its users from them
// without reading their rows (docs/decisions/following-versions.md).
type heldNames = held[string]

// NameBytes bounds the names held: the harness's many viewers rank about
// 40,000 users, about 4 MiB charged.
const NameBytes = 6 << 20

func newHeldNames(max int) *heldNames {
	return newHeld(max, func(name string) int { return len(name) + heldCharge })
}

// lookupLists sets, for each head whose list is held at its version, its
// ids, and appends the users of the others to missing.
func lookupLists(c *followLists, heads []listHead, missing []int64) []int64 {
	c.with(func(get func(key, version int64) ([]byte, bool)) {
		for i := range heads {
			h := &heads[i]
			if h.ids, h.ok = get(h.user, h.version); !h.ok {
				missing = append(missing, h.user)
			}
		}
	})
	return missing
}

// listHead is a list a suggestions call needs: whose, at which version,
// and its ids once found (ok).
type listHead struct {
	user, version int64
	ids           []byte
	ok            bool
}

// codeList codes ids (a list as read, in any order) for holding: sorted,
// the first as a signed varint, each other as its gap from the one before
// it, an unsigned one. It reuses ids' order.
func codeList(ids []int64) []byte {
	slices.Sort(ids)
	b := make([]byte, 0, 2*len(ids)+8)
	for i, id := range ids {
		if i == 0 {
			b = binary.AppendVarint(b, id)
		} else {
			b = binary.AppendUvarint(b, uint64(id-ids[i-1]))
		}
	}
	return b
}

// appendList appends the ids of a list codeList coded to dst.
func appendList(dst []int64, b []byte) []int64 {
	if len(b) == 0 {
		return dst
	}
	last, n := binary.Varint(b)
	if n <= 0 {
		return dst // not a list codeList made; none is held
	}
	dst = append(dst, last)
	for b = b[n:]; len(b) > 0; b = b[n:] {
		var gap uint64
		if gap, n = binary.Uvarint(b); n <= 0 {
			return dst
		}
		last += int64(gap)
		dst = append(dst, last)
	}
	return dst
}

// HeldStats are how suggestions found what they keep in memory since the
// store opened: Hits held at the version the database has, Misses read,
// and Held how many are held now.
type HeldStats struct{ Hits, Misses, Held int64 }

// SuggestionMemory says, for /metrics, how suggestions found the
// followees' lists (followLists) and the candidates' names (heldNames)
// they needed; all zero on a dialect that ranks suggestions in SQL.
func (s *Store) SuggestionMemory() (lists, names HeldStats) {
	return s.lists.stats(), s.names.stats()
}
