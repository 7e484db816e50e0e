// Package resolvers answers the GraphQL schema in graph/ from the store in
// db/. Resolvers stay thin: they check arguments, go to the store through
// request-scoped loaders, and turn store errors into coded GraphQL errors.
// The list fields are described once, in the table in lists.go.
package resolvers

import (
	"log/slog"
	"time"

	"follows/auth"
	"follows/db"
	"follows/graph/model"
)

// Resolver is the root of the resolvers and holds what they share.
type Resolver struct {
	Store  *db.Store
	Tokens *auth.Tokens
	// Cursors signs event cursors (model.EncodeEventCursor) under the
	// server's secret; Tokens when nil.
	Cursors model.CursorSigner
	// BatchWait is how long a loader gathers keys before it runs its
	// statement: long enough for the resolvers of one list to join in.
	BatchWait time.Duration
	// OnBatch, if set, is told each loader batch's size (for metrics).
	OnBatch func(loader string, keys int)
	// Log is where resolvers note what they handle without failing the
	// request; slog.Default() when nil.
	Log *slog.Logger
}

func (r *Resolver) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}
