package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// pipelined writes n numbered requests of size bytes (at least 16), gap
// apart, while it reads the echoes, as a pipelining client does (its
// commands written in successive turns of its event loop, before the first
// answer); it returns how long the last echo took from the first write,
// and fails t unless every echo came back, in order.
func pipelined(t *testing.T, c net.Conn, n, size int, gap time.Duration) time.Duration {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	want := make([]byte, 0, size*n)
	for i := range n {
		want = fmt.Appendf(want, "req %011d\n", i)
		for j := 16; j < size; j++ {
			want = append(want, byte('a'+(i+j)%26))
		}
	}
	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			if i > 0 {
				time.Sleep(gap)
			}
			if _, err := c.Write(want[size*i : size*(i+1)]); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	took := time.Since(start)
	if werr := <-wrote; werr != nil {
		t.Fatalf("write: %v", werr)
	}
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("echoes out of order or changed: byte %d (request %d) is %q, want %q", i, i/size, got[i], want[i])
	}
	return took
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestLatencyPipelinesChunks: a client that writes 8 requests before it
// reads the first answer, through a latency fault of L on either stream,
// has all its answers about L after its last write, as through Toxiproxy:
// each chunk waits L from when it was read while the proxy reads the next
// ones. Small requests spaced by a few milliseconds (each its own chunk)
// would take 2 L if a chunk were read only once the one before it had
// been written (the later ones wait for the first, then together once
// more); requests of 32 KiB written back to back would take about 8 L.
func TestLatencyPipelinesChunks(t *testing.T) {
	checkFDs(t)
	const (
		n   = 8
		lat = 100 * time.Millisecond
	)
	for _, tc := range []struct {
		name   string
		stream string
		size   int
		gap    time.Duration
		limit  time.Duration
	}{
		{"small-spaced/downstream", StreamDownstream, 16, 2 * time.Millisecond, lat * 3 / 2},
		{"small-spaced/upstream", StreamUpstream, 16, 2 * time.Millisecond, lat * 3 / 2},
		{"32KiB-back-to-back/downstream", StreamDownstream, 32 << 10, 0, lat * 5 / 2},
		{"32KiB-back-to-back/upstream", StreamUpstream, 32 << 10, 0, lat * 5 / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Stream: tc.stream, Latency: lat})
			c := e.dial(t)
			exchange(t, c, []byte("warm")) // the upstream connection is up
			took := pipelined(t, c, n, tc.size, tc.gap)
			t.Logf("%d pipelined requests of %d bytes, %v apart, under latency %v: last answer after %v (%.2f × latency)",
				n, tc.size, tc.gap, lat, took, float64(took)/float64(lat))
			if took < lat || took > tc.limit {
				t.Errorf("%d pipelined requests of %d bytes under latency %v took %v; want at least %v and under %v",
					n, tc.size, lat, took, lat, tc.limit)
			}
		})
	}
}

// TestLatencyJitterKeepsOrder: under a latency of 40ms ± 40ms on both
// streams, 60 requests written 1ms apart (each its own chunk with a delay
// rolled of its own) come back complete and in order: a chunk whose delay
// ends before the one of the chunk ahead of it waits for that one. They
// still overlap: all of them take far less than 60 × 40ms.
func TestLatencyJitterKeepsOrder(t *testing.T) {
	checkFDs(t)
	const n, lat = 60, 40 * time.Millisecond
	e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Stream: StreamBoth, Latency: lat, Jitter: lat})
	c := e.dial(t)
	took := pipelined(t, c, n, 16, time.Millisecond)
	t.Logf("%d requests 1ms apart under %v ± %v each way: in order, the last after %v", n, lat, lat, took)
	if took > time.Second {
		t.Errorf("%d requests 1ms apart under %v ± %v each way took %v; want them to overlap (well under 1s)", n, lat, lat, took)
	}
}

// pattern is the test stream: byte i is i mod 251.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// readPattern reads n bytes of pattern from r and reports the first
// difference or error.
func readPattern(r io.Reader, n int) error {
	buf := make([]byte, 32<<10)
	for off := 0; off < n; {
		k, err := r.Read(buf[:min(len(buf), n-off)])
		for i := range k {
			if buf[i] != byte((off+i)%251) {
				return fmt.Errorf("byte %d is %d, want %d", off+i, buf[i], (off+i)%251)
			}
		}
		off += k
		if err != nil && off < n {
			return fmt.Errorf("after %d of %d bytes: %w", off, n, err)
		}
	}
	return nil
}

// TestDelayBufferBoundsHeldBytes: a client writes 4 MiB as fast as it can
// through a 100ms latency fault with a 256 KiB delay buffer. The proxy
// never holds more than 256 KiB of the stream (it stops reading and the
// client's writes wait), it did fill the buffer, every byte arrives in
// order, and the stream's throughput is about the buffer per latency.
func TestDelayBufferBoundsHeldBytes(t *testing.T) {
	checkFDs(t)
	const (
		limit = 256 << 10
		size  = 4 << 20
		lat   = 100 * time.Millisecond
	)
	got := make(chan error, 1)
	up := newUpstream(t, func(c net.Conn) { got <- readPattern(c, size) })
	e := newEnvConfig(t, up, Config{Upstream: up.addr(), DelayBuffer: limit},
		Fault{Type: TypeLatency, Percent: 100, Stream: StreamUpstream, Latency: lat})
	c := e.dial(t)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	if _, err := c.Write(pattern(size)); err != nil {
		t.Fatalf("write: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("upstream: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream did not get 4 MiB within 30 s")
	}
	took := time.Since(start)
	peak := e.p.delayPeak.Load()
	rate := float64(limit) / lat.Seconds()
	t.Logf("4 MiB through latency %v with a %d KiB delay buffer: %v (%.2f MiB/s; buffer per latency %.2f MiB/s); most held at once %d KiB",
		lat, limit>>10, took, float64(size)/took.Seconds()/(1<<20), rate/(1<<20), peak>>10)
	if peak > limit || peak < limit/2 {
		t.Errorf("the delay line held at most %d bytes; want at most the buffer, %d, and at least half of it (filled)", peak, limit)
	}
	if min := time.Duration(float64(size-limit) / rate * 0.8 * float64(time.Second)); took < min {
		t.Errorf("4 MiB took %v; at most %d KiB per %v that is at least %v", took, limit>>10, lat, min)
	}
	testkit.WaitFor(t, 5*time.Second, "no bytes held", func() bool { return e.p.delayed.Load() == 0 })
}

// TestLatencyChangedMidQueue: a chunk that a latency fault holds goes at its
// due time when the fault is cleared or shortened, and a chunk read after
// the change goes right after it, never before; then data passes by the
// new set.
func TestLatencyChangedMidQueue(t *testing.T) {
	checkFDs(t)
	const lat = 300 * time.Millisecond
	for _, tc := range []struct {
		name, put string
		after     time.Duration // the new set's latency
	}{
		{"cleared", `{"faults":[]}`, 0},
		{"shortened", `{"faults":[{"type":"latency","latency":"20ms"}]}`, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Stream: StreamDownstream, Latency: lat})
			c := e.dial(t)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			if _, err := c.Write([]byte("first\n")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			e.put(t, tc.put)
			if _, err := c.Write([]byte("second\n")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 13)
			if _, err := io.ReadFull(c, buf[:6]); err != nil {
				t.Fatal(err)
			}
			first := time.Since(start)
			if _, err := io.ReadFull(c, buf[6:]); err != nil {
				t.Fatal(err)
			}
			second := time.Since(start)
			if string(buf) != "first\nsecond\n" {
				t.Fatalf("read %q, want %q", buf, "first\nsecond\n")
			}
			t.Logf("the held chunk came after %v, the one read after the change %v after it", first, second-first)
			if first < lat || first > lat+200*time.Millisecond {
				t.Errorf("the chunk held when the fault changed came after %v; want its due time, %v", first, lat)
			}
			if second-first > 200*time.Millisecond {
				t.Errorf("the chunk read after the change came %v after the held one; want right after it", second-first)
			}
			if rtt := exchange(t, c, []byte("third\n")); rtt < tc.after || rtt > tc.after+100*time.Millisecond {
				t.Errorf("an exchange after the line emptied took %v; want %v plus at most 100ms", rtt, tc.after)
			}
		})
	}
}

// TestLatencyPassesCloseAfterData: the upstream writes 20 chunks and
// closes; through a latency fault the client gets every byte, then the
// close (a FIN goes once the delay line is empty). (With limit_data ahead
// of the latency: TestLimitDataClosesAfterBytes.)
func TestLatencyPassesCloseAfterData(t *testing.T) {
	checkFDs(t)
	const lat = 100 * time.Millisecond
	e := newEnv(t, func(c net.Conn) {
		b := pattern(20 * 1000)
		for i := range 20 {
			if _, err := c.Write(b[1000*i : 1000*(i+1)]); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}, Fault{Type: TypeLatency, Percent: 100, Latency: lat})
	c := e.dial(t)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if err := readPattern(c, 20*1000); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the data: %d, %v; want EOF", n, err)
	}
	if took := time.Since(start); took < lat {
		t.Errorf("data and close came after %v, before the latency %v", took, lat)
	}
}

// TestEndMidQueueLeavesNothing: a connection whose latency fault holds
// chunks ends at once when the client resets it, when a reset fault meets
// its next chunk, or when the proxy shuts down: the chunks held are let go
// (no byte counted held) and no goroutine (TestMain's goleak) or socket
// (checkFDs) is left.
func TestEndMidQueueLeavesNothing(t *testing.T) {
	checkFDs(t)
	for _, end := range []string{"client-reset", "reset-fault", "shutdown"} {
		t.Run(end, func(t *testing.T) {
			var got atomic.Int64
			e := newEnv(t, func(c net.Conn) {
				n, _ := io.Copy(io.Discard, c)
				got.Store(n)
			}, Fault{Type: TypeLatency, Percent: 100, Stream: StreamUpstream, Latency: time.Hour})
			c := e.dial(t)
			for range 10 {
				if _, err := c.Write(make([]byte, 1000)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			testkit.WaitFor(t, 5*time.Second, "10 kB held", func() bool { return e.p.delayed.Load() == 10_000 })
			start := time.Now()
			switch end {
			case "client-reset":
				_ = c.SetLinger(0)
				c.Close()
			case "reset-fault":
				e.put(t, `{"faults":[{"type":"reset","stream":"upstream","timeout":0}]}`)
				_, _ = c.Write([]byte("x"))
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := c.Read(make([]byte, 1)); n != 0 || !isReset(err) {
					t.Errorf("read after the reset fault: %d, %v; want a reset", n, err)
				}
			case "shutdown":
				if err := e.srv.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return e.p.Open() == 0 })
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the connection ended %v after the %s", took, end)
			}
			if held := e.p.delayed.Load(); held != 0 {
				t.Errorf("%d bytes counted held after the connection ended", held)
			}
			e.up.close()
			if n := got.Load(); n != 0 {
				t.Errorf("the upstream got %d bytes that were to wait an hour", n)
			}
		})
	}
}

// TestLatencyStreamKeepsBytes streams 64 MiB (16 MiB under the race
// detector) through a 5ms latency fault: every byte arrives, in order,
// through copies in pooled buffers and a queue that never empties.
func TestLatencyStreamKeepsBytes(t *testing.T) {
	checkFDs(t)
	size := 64 << 20
	if raceEnabled || testing.Short() {
		size = 16 << 20
	}
	got := make(chan error, 1)
	up := newUpstream(t, func(c net.Conn) { got <- readPattern(c, size) })
	e := newEnvTo(t, up, up.addr(), Fault{Type: TypeLatency, Percent: 100, Stream: StreamUpstream, Latency: 5 * time.Millisecond})
	c := e.dial(t)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	data := pattern(size)
	for off := 0; off < size; off += 1 << 20 { // writes of 1 MiB: reads of every size
		if _, err := c.Write(data[off : off+1<<20]); err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("upstream: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the upstream did not get the stream within a minute")
	}
	t.Logf("%d MiB through a 5ms latency in %v; most held at once %d KiB", size>>20, time.Since(start), e.p.delayPeak.Load()>>10)
	testkit.WaitFor(t, 5*time.Second, "no bytes held", func() bool { return e.p.delayed.Load() == 0 })
}
