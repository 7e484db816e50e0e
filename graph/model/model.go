// Package model holds the GraphQL types that are not the store's own
// (connections, edges and payloads), the Time scalar and the cursors that
// page through lists.
package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"follows/db"

	"github.com/99designs/gqlgen/graphql"
)

// timeLayout is RFC 3339 in UTC with a fixed seven fractional digits, the
// precision the database keeps.
const timeLayout = "2006-01-02T15:04:05.0000000Z07:00"

// MarshalTime writes the Time scalar.
func MarshalTime(t time.Time) graphql.Marshaler { return timeValue(t) }

// timeValue writes a time straight into the response (see write), where
// a closure quoting its formatted text cost three allocations per time
// written. The layout's text needs no escapes in JSON.
type timeValue time.Time

func (t timeValue) MarshalGQL(w io.Writer) {
	write(w, func(b []byte) []byte {
		b = append(b, '"')
		b = time.Time(t).UTC().AppendFormat(b, timeLayout)
		return append(b, '"')
	})
}

// UnmarshalTime reads the Time scalar from any RFC 3339 string.
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, errors.New("a Time must be an RFC 3339 string")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("a Time must be RFC 3339: %w", err)
	}
	return t.UTC(), nil
}

// FollowConnection is a page of a user's followers or following.
type FollowConnection struct {
	Edges    []*FollowEdge
	PageInfo *PageInfo
	// Total counts the whole list; it runs only when totalCount is asked for.
	Total func(context.Context) (int, error)
}

// Nodes are the edges' users, for clients that need no cursors.
func (c *FollowConnection) Nodes() []*db.User {
	out := make([]*db.User, len(c.Edges))
	for i, e := range c.Edges {
		out[i] = e.Node
	}
	return out
}

// TotalCount is the length of the whole list.
func (c *FollowConnection) TotalCount(ctx context.Context) (int, error) { return c.Total(ctx) }

// PageInfo is Relay's page information (see the schema's description).
// The cursors of the page's first and last edges are made only when a
// client asks for them.
type PageInfo struct {
	HasNextPage, HasPreviousPage bool
	List                         List
	// Start and End are the positions of the page's first and last edges;
	// zero when the page is empty.
	Start, End db.Cursor
}

// StartCursor is the first edge's cursor; nil when the page is empty.
func (p *PageInfo) StartCursor() *string { return p.cursor(p.Start) }

// EndCursor is the last edge's cursor; nil when the page is empty.
func (p *PageInfo) EndCursor() *string { return p.cursor(p.End) }

func (p *PageInfo) cursor(c db.Cursor) *string {
	if c.IsZero() {
		return nil
	}
	s := EncodeCursor(p.List, c)
	return &s
}

// FollowEdge is one follow in a page.
type FollowEdge struct {
	List       List // whose cursor this is: ListFollowers or ListFollowing
	Node       *db.User
	FollowedAt time.Time
	// The follow's two ends, whoever the list belongs to.
	FollowerID, FolloweeID int64
}

// Cursor is the edge's position, made only when a client asks for it.
func (e *FollowEdge) Cursor() string {
	return EncodeCursor(e.List, db.Cursor{At: e.FollowedAt, ID: e.Node.ID})
}

// UserEdge is one user in a page of users.
type UserEdge struct {
	List List
	Node *db.User
	At   time.Time // the follow or block that orders the list, if one does
}

// Cursor is the edge's position, made only when a client asks for it.
func (e *UserEdge) Cursor() string {
	return EncodeCursor(e.List, db.Cursor{At: e.At, ID: e.Node.ID})
}

// UserConnection is a page of users.
type UserConnection struct {
	Edges    []*UserEdge
	PageInfo *PageInfo
	// Total counts the whole list; it runs only when totalCount is asked for.
	Total func(context.Context) (int, error)
}

// Nodes are the edges' users, for clients that need no cursors.
func (c *UserConnection) Nodes() []*db.User {
	out := make([]*db.User, len(c.Edges))
	for i, e := range c.Edges {
		out[i] = e.Node
	}
	return out
}

// TotalCount is the length of the whole list.
func (c *UserConnection) TotalCount(ctx context.Context) (int, error) { return c.Total(ctx) }
