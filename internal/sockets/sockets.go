// Package sockets counts the process's open sockets, the descriptors a
// leaked connection holds, for the leak checks of tests.
package sockets

import (
	"os"
	"strings"
)

// Open counts this process's open sockets (Linux; -1 where /proc cannot
// tell). Only sockets are counted: other descriptors come and go with the
// runtime and the test framework (cgroup files, timers, pipes) and make a
// count of every descriptor flicker under load.
func Open() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range es {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
