//go:build linux

package faultproxy

import "syscall"

// peekOpen peeks at the socket without blocking or consuming: open means
// nothing to read (EAGAIN); a FIN (0 bytes), unasked data or an error
// mean the connection is not to be reused.
func peekOpen(rc syscall.RawConn) bool {
	open := true
	err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}

// rawSupported: the raw data plane (rawserver.go) runs here.
const rawSupported = true

// peekGone looks at a client socket without blocking or consuming: done
// is false if there is nothing to read yet (wait for readability), and
// gone is true if the client closed the connection or it failed. Unread
// data (a pipelined request) means the client is there.
func peekGone(fd uintptr) (done, gone bool) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
		return false, false
	}
	return true, err != nil || n == 0
}

// ConnBudget is the most client connections a data plane serves at once
// (the raw HTTP plane, the TCP and PostgreSQL planes): half of the file
// descriptors the process may open (each may hold an upstream connection
// too), less 64 kept for the control API, listeners and files; 0 (no
// bound) if the limit is unknown or unlimited.
func ConnBudget() int {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil || rl.Cur > 1<<30 {
		return 0
	}
	return max(int(rl.Cur)-64, 16) / 2
}
