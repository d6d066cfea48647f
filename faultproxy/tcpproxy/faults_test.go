package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestPassThroughEchoes(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	c := e.dial(t)
	msg := bytes.Repeat([]byte("x"), 100_000)
	exchange(t, c, msg)
	up, down := e.p.m.bytes[dirUp], e.p.m.bytes[dirDown]
	testkit.WaitFor(t, 5*time.Second, "the byte counters", func() bool { return counterValue(t, up) == 100_000 && counterValue(t, down) == 100_000 })
}

// TestLatencyDelaysEachExchange measures the round trip of a small echo on
// one kept connection with a latency fault on each stream and on both.
func TestLatencyDelaysEachExchange(t *testing.T) {
	checkFDs(t)
	for _, tc := range []struct {
		stream string
		want   time.Duration // added to each round trip
	}{
		{StreamDownstream, 60 * time.Millisecond},
		{StreamUpstream, 60 * time.Millisecond},
		{StreamBoth, 120 * time.Millisecond},
	} {
		t.Run(tc.stream, func(t *testing.T) {
			e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Stream: tc.stream, Latency: 60 * time.Millisecond})
			c := e.dial(t)
			for i := range 5 {
				rtt := exchange(t, c, []byte("PING\r\n"))
				if rtt < tc.want || rtt > tc.want+150*time.Millisecond {
					t.Errorf("exchange %d: round trip %v, want %v plus at most 150ms", i, rtt, tc.want)
				}
			}
		})
	}
}

func TestLatencyJitterSpreadsDelays(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo, Fault{Type: TypeLatency, Percent: 100, Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond})
	c := e.dial(t)
	lo, hi := time.Hour, time.Duration(0)
	for range 20 {
		rtt := exchange(t, c, []byte("x"))
		lo, hi = min(lo, rtt), max(hi, rtt)
	}
	if lo < 20*time.Millisecond || hi > 60*time.Millisecond+150*time.Millisecond || hi-lo < 5*time.Millisecond {
		t.Errorf("20 round trips in [%v, %v]; want within [20ms, 60ms+slack] and spread ≥ 5ms", lo, hi)
	}
}

// TestBandwidthPacesStream streams 200 kB through a 400 kB/s downstream.
func TestBandwidthPacesStream(t *testing.T) {
	checkFDs(t)
	const size, rate = 200_000, 400_000
	e := newEnv(t, func(c net.Conn) { _, _ = c.Write(make([]byte, size)) },
		Fault{Type: TypeBandwidth, Percent: 100, BytesPerSecond: rate})
	c := e.dial(t)
	start := time.Now()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v; want %d", n, err, size)
	}
	want := time.Duration(size) * time.Second / rate // 500ms
	if took < want*9/10 || took > want*3 {
		t.Errorf("%d bytes at %d B/s took %v, want about %v (%.0f B/s measured)", size, rate, took, want, float64(size)/took.Seconds())
	}
}

func TestTimeoutStopsDataThenCloses(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo, Fault{Type: TypeTimeout, Percent: 100, Stream: StreamBoth, Timeout: 300 * time.Millisecond})
	c := e.dial(t)
	start := time.Now()
	if _, err := c.Write([]byte("GET\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 16))
	took := time.Since(start)
	if n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d bytes, %v; want no data, then EOF", n, err)
	}
	// The fault's clock starts when the proxy accepts, a little before
	// this test's clock: a few milliseconds early is the same timeout.
	if took < 270*time.Millisecond || took > 2*time.Second {
		t.Errorf("closed after %v, want about 300ms", took)
	}
}

// TestTimeoutZeroNeverCloses: the client's own deadline is what ends the
// wait; once the fault is removed, data passes again on the same
// connection.
func TestTimeoutZeroNeverCloses(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	c := e.dial(t)
	exchange(t, c, []byte("before"))
	e.put(t, `{"faults":[{"type":"timeout","stream":"upstream","timeout":0}]}`)
	_, _ = c.Write([]byte("lost"))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if n, err := c.Read(make([]byte, 16)); n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %d bytes, %v; want the client's own time-out", n, err)
	}
	e.put(t, `{"faults":[]}`)
	exchange(t, c, []byte("after"))
}

func TestResetGivesConnectionReset(t *testing.T) {
	checkFDs(t)
	for _, after := range []time.Duration{0, 150 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			e := newEnv(t, echo, Fault{Type: TypeReset, Percent: 100, Stream: StreamUpstream, Timeout: after})
			c := e.dial(t)
			start := time.Now()
			if _, err := c.Write([]byte("SET k v\r\n")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Read(make([]byte, 16))
			took := time.Since(start)
			if n != 0 || !isReset(err) {
				t.Fatalf("read %d bytes, %v; want connection reset", n, err)
			}
			if took < after || took > after+time.Second {
				t.Errorf("reset after %v, want %v", took, after)
			}
			if e.up.accepted.Load() != 1 {
				t.Errorf("upstream accepted %d connections, want 1", e.up.accepted.Load())
			}
		})
	}
}

// TestSlowCloseDelaysClose: the upstream answers and closes; the client
// gets the answer at once and the close 300ms after the upstream's.
func TestSlowCloseDelaysClose(t *testing.T) {
	checkFDs(t)
	closing := make(chan time.Time, 1)
	e := newEnv(t, func(c net.Conn) {
		_, _ = c.Write([]byte("bye\r\n"))
		closing <- time.Now() // the upstream closes right after
	}, Fault{Type: TypeSlowClose, Percent: 100, Delay: 300 * time.Millisecond})
	c := e.dial(t)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(got); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d, %v; want EOF", n, err)
	}
	closed := time.Since(<-closing)
	if closed < 300*time.Millisecond || closed > 2*time.Second {
		t.Errorf("the client saw the close %v after the upstream's, want about 300ms", closed)
	}
}

// TestLimitDataClosesAfterBytes: 1000 bytes pass, then the connection is
// closed; with a latency fault after it, the close waits for the 1000
// bytes the latency holds.
func TestLimitDataClosesAfterBytes(t *testing.T) {
	checkFDs(t)
	limit := Fault{Type: TypeLimitData, Percent: 100, Bytes: 1000}
	for name, fs := range map[string][]Fault{
		"alone":          {limit},
		"before-latency": {limit, {Type: TypeLatency, Percent: 100, Latency: 100 * time.Millisecond}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, echo, fs...)
			c := e.dial(t)
			go func() { _, _ = c.Write(make([]byte, 5000)) }()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := io.Copy(io.Discard, c)
			if n != 1000 || (err != nil && !isReset(err)) {
				t.Errorf("client got %d bytes, %v; want exactly 1000 then a close", n, err)
			}
		})
	}
}

// TestSlicerSplitsWrites: 100 bytes arrive in reads of at most 10 bytes,
// 10ms apart.
func TestSlicerSplitsWrites(t *testing.T) {
	checkFDs(t)
	msg := bytes.Repeat([]byte("s"), 100)
	e := newEnv(t, func(c net.Conn) { _, _ = c.Write(msg); _, _ = io.Copy(io.Discard, c) },
		Fault{Type: TypeSlicer, Percent: 100, AverageSize: 10, SizeVariation: 0, Delay: 10 * time.Millisecond})
	c := e.dial(t)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	buf := make([]byte, 1000)
	reads, total, largest := 0, 0, 0
	for total < len(msg) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v", total, err)
		}
		reads, total, largest = reads+1, total+n, max(largest, n)
	}
	took := time.Since(start)
	if took < 90*time.Millisecond || largest > 20 || reads < 5 {
		t.Errorf("100 bytes in %d reads (largest %d) over %v; want slices of 10 bytes, 10ms apart (≥ 90ms)", reads, largest, took)
	}
}

// TestDownRefusesNewConnectionsOnly: a connection opened before down goes
// on; a new one is reset and never reaches the upstream.
func TestDownRefusesNewConnectionsOnly(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	old := e.dial(t)
	exchange(t, old, []byte("hi"))
	e.put(t, `{"faults":[{"type":"down"}]}`)
	// The reset may reach the client before its connect returns (a busy
	// machine schedules the dialer late): refused at the dial is refused.
	if nc, err := net.DialTimeout("tcp", e.srv.Addr(), 2*time.Second); err != nil {
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("new connection under down: %v; want a reset or EOF", err)
		}
	} else {
		c := nc.(*net.TCPConn)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte("hi"))
		if n, err := c.Read(make([]byte, 4)); n != 0 || err == nil {
			t.Fatalf("new connection under down read %d, %v; want a reset or EOF", n, err)
		}
		c.Close()
	}
	exchange(t, old, []byte("still"))
	if got := e.up.accepted.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections, want 1 (the one before down)", got)
	}
	e.put(t, `{"faults":[]}`)
	exchange(t, e.dial(t), []byte("back"))
}

// TestFaultChangeAppliesToOpenConnection switches latency on and off
// through the control API while one connection stays open.
func TestFaultChangeAppliesToOpenConnection(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	c := e.dial(t)
	if rtt := exchange(t, c, []byte("a")); rtt > 50*time.Millisecond {
		t.Errorf("pass-through round trip %v", rtt)
	}
	e.put(t, `{"faults":[{"type":"latency","latency":"80ms"}]}`)
	if rtt := exchange(t, c, []byte("b")); rtt < 80*time.Millisecond {
		t.Errorf("round trip %v after latency 80ms was put, want ≥ 80ms", rtt)
	}
	e.put(t, `{"faults":[]}`)
	if rtt := exchange(t, c, []byte("c")); rtt > 50*time.Millisecond {
		t.Errorf("round trip %v after the faults were cleared", rtt)
	}
}

// TestPercentRollsPerConnection: latency at 50% slows the connections its
// seeded rolls pick, every exchange of each, and no other; the rolls pick
// about half of the connections.
func TestPercentRollsPerConnection(t *testing.T) {
	checkFDs(t)
	const lat = 250 * time.Millisecond // far above a stall of a busy machine
	f := Fault{Type: TypeLatency, Percent: 50, Stream: StreamDownstream, Latency: lat}
	e := newEnv(t, echo, f)
	set := &faultSet{gen: 1, faults: []Fault{f}}
	slow := 0
	for i := range 24 {
		c := e.dial(t)
		a, b := exchange(t, c, []byte("1")), exchange(t, c, []byte("2"))
		c.Close()
		want := newPlan(set, 1, uint64(i+1)).chain[dirDown] != nil
		if (a >= lat) != want || (b >= lat) != want {
			t.Errorf("connection %d: exchanges took %v and %v; its roll says slowed = %v", i+1, a, b, want)
		}
		if want {
			slow++
		}
	}
	picked := 0
	for seq := range uint64(10_000) {
		if newPlan(set, 1, seq+1).chain[dirDown] != nil {
			picked++
		}
	}
	if picked < 4800 || picked > 5200 || slow == 0 || slow == 24 {
		t.Errorf("the rolls pick %d of 10000 connections (want about 5000), %d of the 24 measured", picked, slow)
	}
}
