package model

import "strconv"

// Node is what Query.node and Query.nodes find: a value of a type that
// implements the schema's Node interface. *db.User is the only one.
type Node any

// UserID is a user's id in the schema, for User.id and every other field
// that names a user: its decimal database id, as it has always been, so
// that the ids clients hold keep working. As User is the only type with
// ids, they are unique across the schema. A type that becomes a Node later
// must get ids that ParseUserID refuses (a type prefix, "Post:12"), so that
// node(id:) can tell whose an id is and no two objects share one.
func UserID(id int64) string { return strconv.FormatInt(id, 10) }

// ParseUserID reads an id that UserID wrote. Anything else, "007" and "+7"
// included, is no user's id.
func ParseUserID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || UserID(id) != s {
		return 0, false
	}
	return id, true
}
