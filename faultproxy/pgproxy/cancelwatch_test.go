package pgproxy

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// cancelWatcher is pgx's context watcher that sends a cancel request (as
// libpq's clients do on a statement time-out) instead of only cutting the
// connection.
func cancelWatcher(pc *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, CancelRequestDelay: 10 * time.Millisecond, DeadlineDelay: 2 * time.Second}
}
