package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// serveFlags maps service config fields to serve's flag names.
var serveFlags = map[string]string{
	"mode": "mode", "pool_size": "pool-size", "pool_sizes": "pool-sizes", "queue": "queue",
	"queues": "queues", "max_wait": "max-wait", "timeout": "timeout", "conns": "conns",
	"dep_a": "dep-a", "dep_b": "dep-b",
}

// newServeCmd builds the `serve` command: the two-endpoint service under test.
func newServeCmd() *cobra.Command {
	var (
		listenAddr, mode, poolSizes, queues string
		cfg                                 service.Config
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the two-endpoint service under test",
		Long: `serve runs the service under test: GET /a calls dependency A and GET /b calls
dependency B, each holding a permit from its pool for the whole call.

With --mode shared both endpoints draw from one pool "shared" of --pool-size
permits; with --mode bulkhead /a and /b have pools "a" and "b" of half each
(or --pool-sizes). Answers: 200 with the dependency's body; 503 with
X-Bulkhead-Reject: full|wait-timeout; 504 (X-Dependency-Error: timeout) when
the call exceeds --timeout; 502 (X-Dependency-Error: error) otherwise.

The first line of stdout is a JSON announcement with the bound address.`,
		Example: `  bulkheadlab serve --mode bulkhead --pool-size 20 --queue 20 \
    --dep-a http://127.0.0.1:9001 --dep-b http://127.0.0.1:9002`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := service.ParseMode(mode)
			if err != nil {
				return flagError(err, serveFlags)
			}
			cfg.Layout.Mode = m
			if cfg.Layout.PoolSizes, err = parseSizes(poolSizes); err != nil {
				return usageError(fmt.Errorf("--pool-sizes: %w", err))
			}
			if cfg.Layout.Queues, err = parseSizes(queues); err != nil {
				return usageError(fmt.Errorf("--queues: %w", err))
			}
			if cfg.Conns < 1 {
				return usageError(fmt.Errorf("--conns: must be at least 1, got %d", cfg.Conns))
			}
			svc, err := service.New(cfg)
			if err != nil {
				return flagError(err, serveFlags)
			}
			ln, err := listen(listenAddr)
			if err != nil {
				return err
			}
			return serveAnnounced(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(),
				announce.Announcement{Component: "service"}, ln, svc.Serve)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listenAddr, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	f.StringVar(&mode, "mode", "bulkhead", "pool layout: shared or bulkhead")
	f.IntVar(&cfg.Layout.PoolSize, "pool-size", 20, "P: shared pool size, or the total split between a and b in bulkhead mode")
	f.StringVar(&poolSizes, "pool-sizes", "", "explicit bulkhead sizes, e.g. a=10,b=10 (bulkhead mode only)")
	f.IntVar(&cfg.Layout.Queue, "queue", 20, "Q: shared queue length, or the total split between a and b in bulkhead mode")
	f.StringVar(&queues, "queues", "", "explicit bulkhead queue lengths, e.g. a=10,b=10 (bulkhead mode only)")
	f.DurationVar(&cfg.Layout.MaxWait, "max-wait", 250*time.Millisecond, "longest wait in a pool's queue")
	f.DurationVar(&cfg.Timeout, "timeout", 250*time.Millisecond, "T: timeout of each dependency call")
	f.IntVar(&cfg.Conns, "conns", service.DefaultConns, "connection pool size per dependency")
	f.StringVar(&cfg.DepA, "dep-a", "", "URL of dependency A (required)")
	f.StringVar(&cfg.DepB, "dep-b", "", "URL of dependency B (required)")
	f.BoolVar(&cfg.Layout.BrokenSharedBulkhead, defectFlag, false,
		"TEST FAULT: in bulkhead mode route both endpoints to one semaphore (proves the CI check can fail)")
	_ = f.MarkHidden(defectFlag)
	return cmd
}
