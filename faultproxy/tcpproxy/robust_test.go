package tcpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// TestHalfClosePassesFIN: the client sends its request and closes its
// write side; the upstream reads to EOF, then answers and closes; the
// client gets the whole answer, then EOF.
func TestHalfClosePassesFIN(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		_, _ = fmt.Fprintf(c, "got %d bytes", len(b))
	})
	c := e.dial(t)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(make([]byte, 70_000)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got 70000 bytes" {
		t.Fatalf("answer %q, %v; want \"got 70000 bytes\" then EOF", got, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return e.p.Open() == 0 })
}

// TestUpstreamThatNeverAccepts: the kernel completes the handshake, the
// server never reads; the client gives up and the proxy lets go of both
// sides. An upstream where nothing listens closes the client at once.
func TestUpstreamThatNeverAccepts(t *testing.T) {
	checkFDs(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := newEnvTo(t, nil, l.Addr().String())
	c := e.dial(t)
	_, _ = c.Write([]byte("hello"))
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 4)); n != 0 || err == nil {
		t.Fatalf("read %d, %v; want the client's time-out", n, err)
	}
	c.Close()
	testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return e.p.Open() == 0 })

	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := dead.Addr().String()
	dead.Close()
	e2 := newEnvTo(t, nil, addr)
	c2 := e2.dial(t)
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c2.Read(make([]byte, 4)); n != 0 || err == nil {
		t.Fatalf("read %d, %v from a proxy to a dead upstream; want EOF", n, err)
	}
	if got := gather(t, e2.p, "faultproxy_tcp_closed_total", "outcome", "dial_error"); got != 1 {
		t.Errorf("dial_error outcomes %v, want 1", got)
	}
}

// TestClientVanishesMidStream: the upstream streams without end; the
// client reads some and resets; the proxy ends both sides.
func TestClientVanishesMidStream(t *testing.T) {
	checkFDs(t)
	stopped := make(chan error, 1)
	e := newEnv(t, func(c net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				stopped <- err
				return
			}
		}
	})
	c := e.dial(t)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.CopyN(io.Discard, c, 1<<20); err != nil {
		t.Fatal(err)
	}
	_ = c.SetLinger(0)
	c.Close()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream kept writing 5 s after the client vanished")
	}
	testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return e.p.Open() == 0 })
}

// TestStream1GiB streams 1 GiB (64 MiB under the race detector) from the
// client to a counting upstream and checks the proxy's heap stays small.
func TestStream1GiB(t *testing.T) {
	checkFDs(t)
	size := int64(1 << 30)
	if raceEnabled || testing.Short() {
		size = 64 << 20
	}
	counted := make(chan int64, 1)
	e := newEnv(t, func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		counted <- n
	})
	c := e.dial(t)
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, 256<<10)
	start := time.Now()
	var peakHeap uint64
	for sent := int64(0); sent < size; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("after %d bytes: %v", sent, err)
		}
		if sent%(64<<20) == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
		}
	}
	_ = c.CloseWrite()
	if n := <-counted; n != size {
		t.Fatalf("upstream counted %d bytes, want %d", n, size)
	}
	took := time.Since(start)
	t.Logf("%d MiB in %v (%.0f MiB/s); heap in use %d KiB before, at most %d KiB while streaming",
		size>>20, took, float64(size>>20)/took.Seconds(), before.HeapInuse>>10, peakHeap>>10)
	if grew := int64(peakHeap) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("heap grew by %d KiB while streaming; want bounded (< 8 MiB)", grew>>10)
	}
}

// holderEnv makes the test binary a holder process (TestMain): it holds
// the client and upstream ends of many connections, so that the proxy's
// process holds only its own two descriptors per connection.
const holderEnv = "TCPPROXY_TEST_IDLE_HOLDER"

// runHolder listens as the upstream and prints its address; reads the
// proxy's address and a count on stdin; dials that many connections
// through the proxy, waits until the upstream has accepted them all,
// prints "ready"; and holds them until stdin closes.
func runHolder() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	accepted := make(chan net.Conn, 1<<16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	fmt.Println(l.Addr())
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 1
	}
	var addr string
	var n int
	if _, err := fmt.Sscan(in.Text(), &addr, &n); err != nil {
		fmt.Println("error", err)
		return 1
	}
	var held []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		held = append(held, c)
	}
	for range n {
		select {
		case c := <-accepted:
			held = append(held, c)
		case <-time.After(30 * time.Second):
			fmt.Println("error: the upstream did not get every connection")
			return 1
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range held {
		c.Close()
	}
	return 0
}

// Test5000IdleConnections holds 5000 idle connections through the proxy
// (1000 under the race detector, which allows 8128 goroutines) and
// measures its memory per connection (heap and stacks), then closes them
// and checks that every goroutine and descriptor is let go.
func Test5000IdleConnections(t *testing.T) {
	checkFDs(t)
	n := 5000
	if raceEnabled {
		n = 1000
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	if !out.Scan() || strings.HasPrefix(out.Text(), "error") {
		t.Fatalf("holder process: %q", out.Text())
	}
	e := newEnvTo(t, nil, out.Text())
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	fmt.Fprintf(stdin, "%s %d\n", e.srv.Addr(), n)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("holder process: %q", out.Text())
	}
	testkit.WaitFor(t, 5*time.Second, strconv.Itoa(n)+" open connections", func() bool { return e.p.Open() == int64(n) })
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)) / int64(n)
	t.Logf("%d idle connections: %d goroutines more, %d bytes of heap and stack each (heap %d, stack %d)", n,
		runtime.NumGoroutine()-goroutines, per,
		(int64(after.HeapInuse)-int64(before.HeapInuse))/int64(n), (int64(after.StackInuse)-int64(before.StackInuse))/int64(n))
	if per > 64<<10 {
		t.Errorf("%d bytes per idle connection, want at most 64 KiB", per)
	}
	stdin.Close()
	testkit.WaitFor(t, 5*time.Second, "every connection to end", func() bool { return e.p.Open() == 0 })
}

// TestShutdownCutsOpenConnections: kept idle connections and one waiting in
// a latency fault end at once when the server shuts down.
func TestShutdownCutsOpenConnections(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	idle := e.dial(t)
	exchange(t, idle, []byte("x"))
	e.put(t, `{"faults":[{"type":"latency","latency":"1h"}]}`)
	waiting := e.dial(t)
	_, _ = waiting.Write([]byte("y"))
	start := time.Now()
	if err := e.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Shutdown took %v with two connections open", took)
	}
	for _, c := range []net.Conn{idle, waiting} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("read after Shutdown: %d, %v; want the connection closed", n, err)
		}
	}
	if e.p.Open() != 0 {
		t.Errorf("%d connections open after Shutdown", e.p.Open())
	}
}
