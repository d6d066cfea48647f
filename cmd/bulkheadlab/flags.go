package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
)

// noArgs rejects positional arguments as a usage error naming them.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(fmt.Errorf("%s takes no arguments, got %q (flags start with --; see %s --help)",
			cmd.CommandPath(), strings.Join(args, " "), cmd.CommandPath()))
	}
	return nil
}

// listen opens addr (host:port; port 0 picks a free one) for --listen,
// which must be loopback unless allowRemote (--allow-remote).
func listen(addr string, allowRemote bool) (net.Listener, error) {
	if err := loopback.CheckListen("--listen", addr, allowRemote); err != nil {
		return nil, usageError(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError(fmt.Errorf("--listen: %v", err))
	}
	return ln, nil
}

// serveAnnounced prints the announcement line for ln to out (a log line
// to errOut), then runs serve until
// ctx ends (serve shuts down gracefully within a bounded time).
func serveAnnounced(ctx context.Context, out, errOut io.Writer, a announce.Announcement, ln net.Listener,
	serve func(context.Context, net.Listener) error) error {
	a.Addr = ln.Addr().String()
	if err := announce.Write(out, a); err != nil {
		ln.Close()
		return withCode(ExitError, fmt.Errorf("writing announcement: %w", err))
	}
	fmt.Fprintf(errOut, "bulkheadlab %s: listening on %s\n", strings.TrimSpace(a.Component+" "+a.Name), a.Addr)
	if err := serve(ctx, ln); err != nil {
		return withCode(ExitError, err)
	}
	return nil
}
