package main

import (
	"context"
	"errors"
	"strconv"
)

// Exit codes of bulkheadlab. They are part of the CLI contract and are
// documented in docs/ci.md.
const (
	// ExitOK: the command succeeded (for a check: every expectation held).
	ExitOK = 0
	// ExitFailed: an expectation of the hypothesis did not hold.
	ExitFailed = 1
	// ExitUsage: bad flags, a bad spec or another user error.
	ExitUsage = 2
	// ExitInvalid: the run was INVALID — the harness could not hold the load,
	// so nothing can be concluded about the hypothesis.
	ExitInvalid = 3
	// ExitError: the setup is broken before any load (a start command did
	// not run, a target gave no HTTP answer: runner.ErrSetup), or the
	// harness itself failed (I/O, a child process died...).
	ExitError = 4
	// ExitInterrupted: stopped by SIGINT/SIGTERM (128 + SIGINT).
	ExitInterrupted = 130
)

// exitError carries an explicit exit code. A nil err means the command has
// already printed what the user needs and only the code matters.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status " + strconv.Itoa(e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that the process exits with code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageError marks err as a user error (exit 2).
func usageError(err error) error { return withCode(ExitUsage, err) }

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitError
	}
}
