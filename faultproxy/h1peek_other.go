//go:build !linux

package faultproxy

import "syscall"

// peekOpen cannot look without blocking here: the connection is taken as
// open (a failed reuse is retried for requests without a body).
func peekOpen(rc syscall.RawConn) bool { return true }
