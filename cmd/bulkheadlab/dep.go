package main

import (
	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// newDepCmd builds the `dep` command: a dependency stub.
func newDepCmd() *cobra.Command {
	var (
		listenAddr  string
		allowRemote bool
		flags       service.DepFlags
	)
	cmd := &cobra.Command{
		Use:   "dep",
		Short: "Run a dependency stub",
		Long: `dep runs a dependency stub: every request (other than /healthz and /metrics)
waits --latency ± --jitter (uniform, drawn from a source seeded with --seed)
and answers 200 with --size bytes. A caller that gives up stops the wait.

With --capacity C the stub serves at most C requests at once: the others
wait for a slot in arrival order, and their latency starts only when they
get one (an M/G/c server, whose latency grows with concurrency). At most
--queue wait (0: up to 10000); a request beyond them is answered 503 with
X-Dep-Overloaded at once, and a waiting request whose caller gives up
leaves the queue. /metrics shows bulkheadlab_dep_in_service,
bulkheadlab_dep_queue_length and bulkheadlab_dep_queue_wait_seconds.

With --payload N the stub answers a JSON document of about N bytes (an
array of small records drawn from --seed, application/json) instead of
--size bytes of text: the service decodes it.

The first line of stdout is a JSON announcement with the bound address.`,
		Example: `  bulkheadlab dep --name A --latency 10ms --jitter 2ms --seed 1 --size 64
  bulkheadlab dep --name A --latency 20ms --capacity 4 --queue 100
  bulkheadlab dep --name A --latency 10ms --payload 786432`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := flags.Config()
			if err != nil {
				return usageError(err)
			}
			d, err := service.NewDep(cfg)
			if err != nil {
				return usageError(err)
			}
			ln, err := listen(listenAddr, allowRemote)
			if err != nil {
				return err
			}
			return serveAnnounced(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(),
				announce.Announcement{Component: "dep", Name: cfg.Name}, ln, d.Serve)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listenAddr, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port); loopback unless --allow-remote")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow listening beyond loopback (other machines can then reach it)")
	flags.Bind(f)
	return cmd
}
