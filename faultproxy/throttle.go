package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// TypeThrottle is the throttle fault: the body of an answer forwarded from
// the upstream reaches the client at most BytesPerSecond bytes per second,
// in writes of at most throttleSlice worth of it (at least one byte), each
// sent on at once; its head goes out as it comes. An answer's first
// bytes go out without waiting, and no credit is saved up while nothing
// is written. The call holds its caller for its body's size / rate (a 64
// KiB answer at 16 KiB/s: 4 s), which is what a dependency on a slow
// link, or a server that streams a large answer slowly, does to its
// callers. It acts on forwarded answers only: a terminal fault that fired
// answers instead. Toxiproxy's bandwidth toxic on the downstream, per
// answer; on a TCP dependency it is the TCP plane's bandwidth fault on
// the downstream, per connection.
const TypeThrottle = "throttle"

// Throttle is the parameters of a throttle fault.
type Throttle struct {
	// BytesPerSecond is the rate, 1–MaxThrottleRate; a spec may write it
	// with a unit ("64KiB").
	BytesPerSecond int64 `fault:"bytes_per_second,bytes"`
}

// MaxThrottleRate bounds a throttle fault's BytesPerSecond (the TCP
// plane's bound on its bandwidth fault).
const MaxThrottleRate = 1 << 40

// throttleSlice is how much time's worth of the rate one write carries.
const throttleSlice = 20 * time.Millisecond

// throttleType is the throttle fault type.
type throttleType struct{}

func (throttleType) name() string { return TypeThrottle }
func (throttleType) role() role   { return roleShape }
func (throttleType) params() any  { return Throttle{} }

func (throttleType) validate(f *Fault, field string) error {
	if r := params[Throttle](f).BytesPerSecond; r < 1 || r > MaxThrottleRate {
		return fieldErr(field+".bytes_per_second", "must be between 1 and %d bytes per second, got %d", int64(MaxThrottleRate), r)
	}
	return nil
}

func (throttleType) normalized(f Fault) Fault { return f }

// hold: the body's time at the rate adds to the call; without its size,
// the time is not known.
func (throttleType) hold(f *Fault, body int64) Hold {
	r := params[Throttle](f).BytesPerSecond
	if body <= 0 || r <= 0 {
		return Hold{Kind: HoldAdds, Most: Unbounded}
	}
	d := time.Duration(float64(body) / float64(r) * float64(time.Second))
	return Hold{Kind: HoldAdds, Mean: d, Least: d, Most: d, Param: "bytes_per_second",
		Text: fmt.Sprintf("a %d-byte answer at %d bytes/s (%v)", body, r, d)}
}

// counterparts: the TCP plane's bandwidth on the downstream (the whole
// stream of the connection, heads too); none on the PostgreSQL plane.
func (throttleType) counterparts() map[string]counterpart {
	return map[string]counterpart{
		PlaneTCP: func(f *Fault) (map[string]any, error) {
			return map[string]any{"type": "bandwidth", "stream": "downstream", "bytes_per_second": params[Throttle](f).BytesPerSecond}, nil
		},
	}
}

func (throttleType) describe(f *Fault) string {
	return fmt.Sprintf("throttle: answer bodies at %d bytes/s", params[Throttle](f).BytesPerSecond)
}

func (throttleType) example() Fault {
	return Fault{Type: TypeThrottle, Percent: 100, Params: Throttle{BytesPerSecond: 64 << 10}}
}

// shapeBody paces the body written to out at the fault's rate.
func (throttleType) shapeBody(f *Fault, out bodyOut) io.Writer {
	rate := params[Throttle](f).BytesPerSecond
	return &throttleWriter{out: out, rate: rate, slice: max(rate*int64(throttleSlice)/int64(time.Second), 1)}
}

// errThrottleStopped ends a throttled body whose client went away or whose
// proxy is closing.
var errThrottleStopped = errors.New("faultproxy: throttled answer stopped")

// throttleWriter writes to out at most rate bytes per second, slice bytes
// at a time, each flushed.
type throttleWriter struct {
	out         bodyOut
	rate, slice int64
	next        time.Time // when the next slice may go
	timer       *time.Timer
}

func (w *throttleWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := int(min(int64(len(b)), w.slice))
		if err := w.waitNext(); err != nil {
			return n, err
		}
		m, err := w.out.Write(b[:k])
		n += m
		if err == nil {
			err = w.out.flush()
		}
		if err != nil {
			return n, err
		}
		w.next = w.next.Add(time.Duration(int64(k) * int64(time.Second) / w.rate))
		b = b[k:]
	}
	return n, nil
}

// waitNext waits until the next slice may go: at once if its time has
// passed (nothing is saved up), else until then, unless the proxy stops or
// the client goes away first.
func (w *throttleWriter) waitNext() error {
	now := time.Now()
	if w.next.Before(now) {
		w.next = now
		return nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(w.next.Sub(now))
	} else {
		w.timer.Reset(w.next.Sub(now))
	}
	select {
	case <-w.timer.C:
		return nil
	case <-w.out.stop:
	case <-w.out.gone:
	}
	w.timer.Stop()
	return errThrottleStopped
}
