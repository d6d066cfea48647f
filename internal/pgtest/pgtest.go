// Package pgtest starts a real PostgreSQL server for tests (see
// internal/pgserver): Debian's postgresql, initialised into a temporary
// folder, listening on a free 127.0.0.1 port only, with trust
// authentication for one user, TLS beside plain text, and no durability,
// stopped when the test ends.
package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
)

// User is the superuser the server trusts, Database the database it serves.
const (
	User     = pgserver.User
	Database = pgserver.Database
)

// Server is a running PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is the server's host:port, on 127.0.0.1.
	Addr string
	pid  int // the postmaster's
	s    *pgserver.Server
}

// DSN is a connection URL for the server, without TLS (the server serves
// it too: sslmode=require connects with TLS).
func (s *Server) DSN() string { return DSNAt(s.Addr) }

// DSNAt is the DSN of a server (or a proxy in front of one) at addr,
// host:port, with the server's user and database and without TLS.
func DSNAt(addr string) string { return pgserver.DSNAt(addr) }

// Exec runs sql (one or more statements, the simple query protocol) on a
// new connection and fails t on an error. It bounds the whole at 30 s.
func (s *Server) Exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.s.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Start starts PostgreSQL on a free 127.0.0.1 port and returns it once it
// accepts connections; it is stopped (immediate shutdown, every backend
// with it) and its folder removed when the test ends. Without PostgreSQL
// the test is skipped, except when the environment sets CI, where it
// fails: a skip there would hide that the server is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := pgserver.Start(pgserver.Options{TLS: true, MaxConnections: 60})
	switch {
	case errors.Is(err, pgserver.ErrNotInstalled) && os.Getenv("CI") != "":
		t.Fatalf("%v; CI must install it", err)
	case errors.Is(err, pgserver.ErrNotInstalled):
		t.Skipf("%v; skipping the PostgreSQL test", err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Server{Addr: s.Addr, pid: s.PID, s: s}
}
