package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// newServeCmd builds the `serve` command: the service under test.
func newServeCmd() *cobra.Command {
	var (
		listenAddr  string
		allowRemote bool
		flags       service.ServeFlags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service under test",
		Long: `serve runs the service under test: each endpoint calls its dependency,
holding a permit from its pool for the whole call. By default GET /a calls
dependency A (--dep-a) and GET /b calls B (--dep-b); --endpoint NAME=URL
(repeatable) adds endpoints of other names.

With --mode shared every endpoint draws from one pool "shared" of --pool-size
permits; with --mode bulkhead each endpoint has a pool of its own name, the
permits split evenly among the pools (or --pool-sizes, keyed by pool);
--pool-group NAME=E1,E2 (repeatable) makes endpoints E1 and E2 share one
pool NAME instead. Answers: 200 with the dependency's
body; 503 with X-Bulkhead-Reject: full|wait-timeout; 504
(X-Dependency-Error: timeout) when the call exceeds --timeout; 502
(X-Dependency-Error: error) otherwise.

The first line of stdout is a JSON announcement with the bound address.`,
		Example: `  bulkheadlab serve --mode bulkhead --pool-size 20 --queue 20 \
    --dep-a http://127.0.0.1:9001 --dep-b http://127.0.0.1:9002`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := flags.Config()
			if err != nil {
				return usageError(err)
			}
			for _, e := range cfg.Endpoints {
				if err := loopback.CheckURL("--endpoint "+e.Name, e.URL, allowRemote); err != nil {
					return usageError(err)
				}
			}
			svc, err := service.New(cfg)
			if err != nil {
				return usageError(err)
			}
			if cfg.GOMAXPROCS > 0 { // this process is the service's own
				runtime.GOMAXPROCS(cfg.GOMAXPROCS)
			}
			ln, err := listen(listenAddr, allowRemote)
			if err != nil {
				return err
			}
			return serveAnnounced(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(),
				announce.Announcement{Component: "service"}, ln, svc.Serve)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listenAddr, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port); loopback unless --allow-remote")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow listening beyond loopback (other machines can then reach it)")
	flags.Bind(f)
	return cmd
}
