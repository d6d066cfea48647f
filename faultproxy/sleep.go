package faultproxy

import "time"

// SleepUntil waits until deadline, on the process's kernel timer where
// there is one (see waker.go: within tens of microseconds of it, where a
// Go timer of an idle process is up to a millisecond late), else on a Go
// timer. It reports false, at once, if cancel or stop is closed first. It
// is how data planes outside this package (faultproxy/tcpproxy) time
// their injected delays as precisely as this one. Safe for concurrent use.
func SleepUntil(cancel, stop <-chan struct{}, deadline time.Time) bool {
	if !time.Now().Before(deadline) {
		return true
	}
	w := theWaker()
	if w == nil {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-cancel:
		case <-stop:
		}
		return false
	}
	it := w.add(deadline)
	defer w.cancel(it)
	select {
	case <-it.ch:
		return true
	case <-cancel:
	case <-stop:
	}
	return false
}
