//go:build !linux

package sysmon

// onMainThread: elsewhere there is no parent-death signal to lose.
func onMainThread() bool { return true }
