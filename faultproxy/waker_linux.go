//go:build linux && (amd64 || arm64)

package faultproxy

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerfd is a Linux timerfd on CLOCK_MONOTONIC (the clock of Go's
// monotonic time), read through the runtime's poller.
type timerfd struct {
	fd int      // for timerfd_settime; f.Fd() would make f blocking
	f  *os.File // non-blocking, so reads park on the poller
}

func newKernelTimer() (kernelTimer, error) {
	const clockMonotonic = 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic,
		uintptr(syscall.O_NONBLOCK|syscall.O_CLOEXEC), 0)
	if errno != 0 {
		return nil, fmt.Errorf("timerfd_create: %w", errno)
	}
	return &timerfd{fd: int(fd), f: os.NewFile(fd, "timerfd")}, nil
}

type itimerspec struct {
	interval, value syscall.Timespec
}

func (t *timerfd) arm(d time.Duration) error {
	if d <= 0 {
		d = 1 // a zero value would disarm
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno := syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("timerfd_settime: %w", errno)
	}
	return nil
}

func (t *timerfd) wait() error {
	var buf [8]byte // the number of expirations
	_, err := io.ReadFull(t.f, buf[:])
	return err
}
