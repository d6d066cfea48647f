//go:build linux

package runner

import "syscall"

// childAttr puts a child in its own process group (so that a terminal's
// Ctrl-C reaches only the runner, which then stops the children in order)
// and asks the kernel to SIGKILL it if the runner dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// signalGroup sends sig to the child's process group.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// setNice sets the niceness of the child's process group (its threads
// included: they share the group).
func setNice(pid, nice int) error { return syscall.Setpriority(syscall.PRIO_PGRP, pid, nice) }

// groupAlive reports whether the process group pid still has a member
// (the first process may have exited while what it started runs on).
func groupAlive(pid int) bool { return syscall.Kill(-pid, 0) == nil }
