package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bulkheadlab/bulkheadlab/experiments/runner"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/bulkheadlab/bulkheadlab/loadgen/shards"
)

// localShards starts n `bulkheadlab shard` processes on loopback, to send
// every run's load between them, commanded only with token; stop ends
// them. Their targets are loopback's: a run's components get their ports
// when it starts, after the shards.
func localShards(ctx context.Context, n int, token string) (*shards.Fleet, func(), error) {
	if n < 1 || n > loadgen.MaxShards {
		return nil, nil, usageError(fmt.Errorf("--shards: %d is not in [1, %d]", n, loadgen.MaxShards))
	}
	// Not niced: the shards are the experiment's clock, as the runner is.
	sup := &runner.Supervisor{Token: token}
	f := &shards.Fleet{Version: shards.Protocol, Token: token}
	var children []*runner.Child
	stop := func() {
		for _, c := range children {
			_ = c.Stop(runner.DefaultStopGrace)
		}
	}
	for i := range n {
		c, err := sup.Start(ctx, runner.ChildSpec{Name: "shard-" + strconv.Itoa(i),
			Args: []string{"shard", "--listen", "127.0.0.1:0", "--index", strconv.Itoa(i)}, Control: true})
		if err != nil {
			stop()
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, nil, withCode(ExitInterrupted, ctx.Err())
			}
			return nil, nil, fmt.Errorf("--shards: %w", err)
		}
		children = append(children, c)
		f.Endpoints = append(f.Endpoints, shards.Endpoint{Name: c.Name, URL: c.URL()})
	}
	return f, stop, nil
}
