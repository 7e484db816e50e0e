package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"follows/db"
)

// readiness answers /readyz: 200 while the store can serve, and otherwise
// 503 with the reason in the body, so that a load balancer stops sending
// requests the server cannot answer and its operators see why: the
// database does not answer, or its storage refused the last write for
// want of space (until a write succeeds again). Ids used up
// (db.ErrIDsExhausted) are not a reason: they refuse sign-ups only, while
// every other write succeeds, and any client may try a sign-up, so that
// failing readiness on one would let a client take the server away.
func readiness(store *db.Store, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		err := store.Ready(ctx)
		if err == nil {
			io.WriteString(w, "ready\n")
			return
		}
		reason := "the database does not answer"
		if errors.Is(err, db.ErrStorageFull) {
			reason = "the database's storage is full: writes fail until one succeeds again"
		}
		log.Warn("not ready: "+reason, "err", err)
		http.Error(w, reason, http.StatusServiceUnavailable)
	}
}
