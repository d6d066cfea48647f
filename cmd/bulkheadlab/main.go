// Command bulkheadlab is a chaos experiment harness that measures whether
// per-dependency bulkheads keep unrelated endpoints available when one
// dependency becomes slow. See the README for a tour and docs/ for the
// details.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/bulkheadlab/bulkheadlab/internal/redact"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// init keeps the main goroutine on the process's first thread until the
// command starts. `proxy` (--tune-runtime) executes the program again,
// and only when it does so from that thread does the new image keep the
// parent-death signal (Pdeathsig) that a supervising runner set: the
// signal belongs to the thread that was forked, and the threads that the
// runtime starts later do not have it. Every command unlocks it once it
// no longer needs it (see newRootCmd and runProxy).
func init() { runtime.LockOSThread() }

func main() {
	os.Exit(run())
}

// run executes the root command and maps its error to an exit code.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels ctx and starts an orderly teardown; after it
	// the default handling is back, so a second Ctrl-C ends the process at
	// once (children still die through their parent-death signal).
	go func() { <-ctx.Done(); stop() }()
	ctx = context.WithValue(ctx, reexecKey{}, true)

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
		fmt.Fprintf(os.Stderr, "bulkheadlab: %s\n", redact.Text(err.Error())) // no password on the console
	}
	return code
}
