// Package sysmon keeps the Go runtime's monitor thread (sysmon) awake in
// a process that serves requests one at a time with idle gaps between
// them, such as the fault proxy.
//
// By default, when every P of a Go process is idle, sysmon sleeps until
// the next timer, and the next goroutine that enters a system call wakes
// it (a futex wake, on that goroutine's path) and resets its polling
// period to 20 µs. A proxy that goes idle between requests pays this on
// every request: the wake-up before its first read, then sysmon polling
// every 20 µs while the request is served (golang/go#18236). Measured on
// loopback at 1000 requests/s, that was a quarter of the proxy's CPU time
// and tens of µs of added latency per request.
//
// The runtime has no setting for this, but it never puts sysmon into that
// sleep while GODEBUG=schedtrace is set; sysmon then backs off from 20 µs
// to a 10 ms period as long as it finds nothing to do. Setting schedtrace
// to its largest period (2147483647 ms, 24.8 days) keeps that behaviour
// at the cost of one "SCHED ..." line on standard error at most every
// 24.8 days (at start if the machine has been up longer), and a scheduler
// dump on a fatal runtime error. GODEBUG is read once at start, so the
// process executes itself again with it set (Reexec); the PID, arguments,
// open files and the rest of the environment stay the same.
package sysmon

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// Setting is the GODEBUG setting that keeps sysmon awake.
const Setting = "schedtrace=2147483647"

// Awake reports whether godebug (a GODEBUG value) already sets schedtrace,
// to any value: then sysmon does not sleep, or the user chose a trace.
func Awake(godebug string) bool {
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "schedtrace" {
			return true
		}
	}
	return false
}

// Env returns env (KEY=VALUE entries) with Setting added to its GODEBUG,
// keeping the other GODEBUG settings, unless GODEBUG already sets
// schedtrace. env is not modified.
func Env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	godebug := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v // the last one wins, as in os.Getenv
			continue
		}
		out = append(out, kv)
	}
	switch {
	case Awake(godebug):
	case godebug == "":
		godebug = Setting
	default:
		godebug += "," + Setting
	}
	return append(out, "GODEBUG="+godebug)
}

// ErrNotMainThread is Reexec's refusal to execute from a thread other
// than the process's first one.
var ErrNotMainThread = errors.New("sysmon: not on the main thread (runtime.LockOSThread in an init function keeps main there)")

// Reexec executes this program again, with the same arguments and
// Env(os.Environ()), if GODEBUG does not set schedtrace yet. It does not
// return on success; it returns nil without doing anything if schedtrace
// is set, and an error if the executable cannot be found or executed (the
// process then goes on as it is).
//
// It must be called from the process's first thread, and returns
// ErrNotMainThread otherwise: on Linux a parent-death signal (Pdeathsig)
// that a supervising parent set belongs to that thread alone, and the new
// image keeps only the thread that executed it, so executing from another
// would leave the process running after its parent dies.
func Reexec() error {
	if Awake(os.Getenv("GODEBUG")) {
		return nil
	}
	if !onMainThread() {
		return ErrNotMainThread
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, Env(os.Environ()))
}
