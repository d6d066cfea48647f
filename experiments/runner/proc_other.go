//go:build !linux

package runner

import (
	"os"
	"syscall"
)

// childAttr: without Pdeathsig, children of a killed runner can outlive it
// on this platform.
func childAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

func setNice(pid, nice int) error { return nil }

// groupAlive reports whether the process group still has members; without
// process groups, whether the process itself has not been reaped.
func groupAlive(pid int) bool { return signalGroup(pid, 0) == nil }
