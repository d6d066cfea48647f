package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// parseSizes parses a per-pool list such as "a=10,b=10" into a map. An empty
// string gives a nil map. Values must be non-negative integers; names must
// be unique. Which names are allowed is the consumer's business.
func parseSizes(s string) (map[string]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("entry %q is not name=value (example: a=10,b=10)", part)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("entry %q: value must be a non-negative integer", part)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("entry %q: %s given twice", part, name)
		}
		out[name] = n
	}
	return out, nil
}

// flagError turns a service *ConfigError into a usage error naming the
// flag that sets the field; fields maps config field names (before any
// ".pool" suffix) to flag names.
func flagError(err error, fields map[string]string) error {
	var ce *service.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	field, pool, _ := strings.Cut(ce.Field, ".")
	flag, ok := fields[field]
	if !ok {
		return usageError(err)
	}
	if pool != "" {
		return usageError(fmt.Errorf("--%s: pool %s: %s", flag, pool, ce.Msg))
	}
	return usageError(fmt.Errorf("--%s: %s", flag, ce.Msg))
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageError(err)
	}
	return nil
}

// listen opens addr (host:port; port 0 picks a free one) for --listen.
func listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageError(fmt.Errorf("--listen: %q is not host:port: %v", addr, err))
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
