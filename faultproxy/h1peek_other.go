//go:build !linux

package faultproxy

import "syscall"

// peekOpen cannot look without blocking here: the connection is taken as
// open (a failed reuse is retried for requests without a body).
func peekOpen(rc syscall.RawConn) bool { return true }

// rawSupported: without a non-blocking peek the raw data plane cannot
// watch for clients that go away; net/http serves the data plane here.
const rawSupported = false

func peekGone(fd uintptr) (done, gone bool) { return true, false }

// ConnBudget is the most client connections a data plane serves at once:
// no bound (0) here.
func ConnBudget() int { return 0 }
