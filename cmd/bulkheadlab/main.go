// Command bulkheadlab is a chaos experiment harness that measures whether
// per-dependency bulkheads keep unrelated endpoints available when one
// dependency becomes slow. See the README for a tour.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run())
}

// run executes the root command and maps its error to an exit code.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if code == ExitInterrupted && ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bulkheadlab: interrupted")
		return code
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.err != nil {
		fmt.Fprintf(os.Stderr, "bulkheadlab: %v\n", err)
	}
	return code
}
