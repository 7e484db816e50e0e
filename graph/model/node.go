package model

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
)

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

// MarshalUserKey writes a user's database id as the ID it is in the
// schema (UserID). Bound in gqlgen.yml to the ID scalar for int64 fields,
// it lets User.id read db.User's ID field directly: a field gqlgen resolves
// in place, rather than a resolver, which it would run on a goroutine of
// its own for every user of a list.
func MarshalUserKey(id int64) graphql.Marshaler {
	return userKey(id)
}

// UnmarshalUserKey reads an ID that UserID wrote; gqlgen asks for it with
// MarshalUserKey, though no argument or input field takes one.
func UnmarshalUserKey(v any) (int64, error) {
	s, err := graphql.UnmarshalID(v)
	if err != nil {
		return 0, err
	}
	id, ok := ParseUserID(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a user's id", s)
	}
	return id, nil
}

// userKey is a user's id as a graphql.Marshaler, written without the
// closure and string that graphql.MarshalID(UserID(id)) would allocate.
type userKey int64

func (k userKey) MarshalGQL(w io.Writer) {
	write(w, func(b []byte) []byte {
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(k), 10)
		return append(b, '"')
	})
}

// write writes what appendTo appends, into the spare room of the buffer
// that gqlgen marshals a response into; a buffer of the caller's own
// escapes to the heap through io.Writer, an allocation per value.
func write(w io.Writer, appendTo func([]byte) []byte) {
	if buf, ok := w.(*bytes.Buffer); ok {
		buf.Write(appendTo(buf.AvailableBuffer()))
		return
	}
	w.Write(appendTo(nil))
}
