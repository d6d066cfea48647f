package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
)

// newPostgresCmd builds the `postgres` command: a real PostgreSQL server
// for an experiment whose dependency is a database.
func newPostgresCmd() *cobra.Command {
	var (
		listenAddr string
		setup      string
		maxConns   int
	)
	cmd := &cobra.Command{
		Use:   "postgres",
		Short: "Run a PostgreSQL server for an experiment",
		Long: `postgres runs a real PostgreSQL server (Debian's postgresql package, whose
initdb and postgres it finds on PATH or in /usr/lib/postgresql/*/bin) for an
experiment whose dependency is a database: initialised into a new temporary
folder, listening on 127.0.0.1 only, trust authentication for the user
` + pgserver.User + `, no durability (fsync off). --setup runs SQL once it
accepts connections (tables, rows). It stops at once (every backend with it)
and removes its folder on SIGINT or SIGTERM, or when its parent dies. Run as
root, the server runs as the postgres user.

The first line of stdout is a JSON announcement with the bound address;
connect with postgres://` + pgserver.User + `@ADDR/` + pgserver.Database + `?sslmode=disable.`,
		Example: `  bulkheadlab postgres --setup "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 1000)"`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, portStr, err := net.SplitHostPort(listenAddr)
			port, perr := strconv.Atoi(portStr)
			if err != nil || perr != nil || port < 0 || port > 65535 || (host != "127.0.0.1" && host != "localhost") {
				return usageError(fmt.Errorf("--listen: want 127.0.0.1:PORT (0: a free port), got %q", listenAddr))
			}
			if maxConns < 1 || maxConns > 10000 {
				return usageError(fmt.Errorf("--max-connections: want 1–10000, got %d", maxConns))
			}
			s, err := pgserver.Start(pgserver.Options{Port: port, MaxConnections: maxConns, Setup: setup})
			switch {
			case errors.Is(err, pgserver.ErrNotInstalled):
				return usageError(err)
			case errors.Is(err, pgserver.ErrSetup):
				return usageError(fmt.Errorf("--setup: %w", err))
			}
			if err != nil {
				return err
			}
			defer s.Stop()
			if err := announce.Write(cmd.OutOrStdout(), announce.Announcement{Component: "postgres", Addr: s.Addr}); err != nil {
				return err
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listenAddr, "listen", "127.0.0.1:0", "address to listen on, on 127.0.0.1 (port 0 picks a free port)")
	f.StringVar(&setup, "setup", "", "SQL to run once the server accepts connections (tables, rows)")
	f.IntVar(&maxConns, "max-connections", 200, "the server's max_connections")
	return cmd
}
