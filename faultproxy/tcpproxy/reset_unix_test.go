//go:build unix

package tcpproxy

import "syscall"

var errConnReset error = syscall.ECONNRESET
