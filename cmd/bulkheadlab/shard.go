package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// newShardCmd builds the `shard` command: one load generator of several.
func newShardCmd() *cobra.Command {
	var (
		listenAddr  string
		allowRemote bool
		index       int
	)
	cmd := &cobra.Command{
		Use:   "shard",
		Short: "Run a load-generator shard (for run --shards or a Kubernetes run)",
		Long: `shard waits for a runner to arm it with its share of a load, then sends it
from the instant the runner releases every shard at, and streams every result
back for the runner to merge. ` + "`run --shards N`" + ` starts N of them on this
machine; ` + "`run --kubernetes`" + ` runs them as the pods of an Indexed Job.

The index defaults to $JOB_COMPLETION_INDEX (an Indexed Job's); the runner
refuses a shard that answers with another one. Targets must be on loopback
unless --allow-remote. The first line of stdout is a JSON announcement with
the bound address.

Only the runner commands a shard: every request but GET /healthz must carry
the run's token, which the shard reads from $BULKHEADLAB_TOKEN (the runner
sets it; never a flag, which the process list shows). With --allow-remote a
token is required, and so is the run's target list in
$BULKHEADLAB_SHARD_TARGETS (URLs, comma-separated): an arm naming any other
scheme://host:port is refused.`,
		Example: `  bulkheadlab shard --listen 127.0.0.1:0
  bulkheadlab shard --listen :7070 --allow-remote`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("index") {
				if v, ok := os.LookupEnv("JOB_COMPLETION_INDEX"); ok {
					i, err := strconv.Atoi(v)
					if err != nil || i < 0 {
						return usageError(fmt.Errorf("$JOB_COMPLETION_INDEX: %q is not an index", v))
					}
					index = i
				}
			}
			token, err := controlToken(allowRemote)
			if err != nil {
				return err
			}
			targets, err := shards.ParseTargets(os.Getenv(shards.EnvTargets))
			if err != nil {
				return usageError(err)
			}
			if allowRemote && len(targets) == 0 {
				return usageError(fmt.Errorf("--allow-remote: $%s must list the run's targets (a shard beyond loopback sends only to them)", shards.EnvTargets))
			}
			ln, err := listen(listenAddr, allowRemote)
			if err != nil {
				return err
			}
			a := &shards.Agent{Version: shards.Protocol, Index: index, AllowRemote: allowRemote, Token: token, Targets: targets}
			return serveAnnounced(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(),
				announce.Announcement{Component: "shard", Name: strconv.Itoa(index)}, ln,
				func(ctx context.Context, ln net.Listener) error {
					// No write timeout: a shard's result stream lasts the run.
					return service.ServeHTTP(ctx, ln, a.Handler(), 0)
				})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listenAddr, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port); loopback unless --allow-remote")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow listening beyond loopback, and targets beyond it (a shard in a cluster)")
	f.IntVar(&index, "index", -1, "the shard's index (default $JOB_COMPLETION_INDEX, else none)")
	return cmd
}
