package tcpproxy

import (
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"
)

// bareRelay is the obvious alternative: a goroutine per direction copying
// with io.CopyBuffer, no faults, no accounting.
func bareRelay(b *testing.B, upstream string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				u, err := net.Dial("tcp", upstream)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{})
				go func() {
					_, _ = io.CopyBuffer(struct{ io.Writer }{u}, struct{ io.Reader }{c}, make([]byte, 32<<10))
					u.Close()
					close(done)
				}()
				_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{u}, make([]byte, 32<<10))
				c.Close()
				<-done
			})
		}
	})
	return l.Addr().String()
}

// BenchmarkExchange times a 64-byte request and its echo over one kept
// connection: direct, through the bare relay, and through the proxy with no
// fault (and with a latency fault of zero, which takes the stage path).
func BenchmarkExchange(b *testing.B) {
	up := newUpstream(b, echo)
	p, err := New(Config{Upstream: up.addr(), ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(b.Context()) })
	for _, tc := range []struct {
		name   string
		addr   string
		faults []Fault
	}{
		{"direct", up.addr(), nil},
		{"bare-relay", bareRelay(b, up.addr()), nil},
		{"proxy", srv.Addr(), nil},
		{"proxy-latency-0", srv.Addr(), []Fault{{Type: TypeLatency, Percent: 100, Stream: StreamBoth}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if err := p.SetFaults(tc.faults); err != nil {
				b.Fatal(err)
			}
			c, err := net.Dial("tcp", tc.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			msg, got := make([]byte, 64), make([]byte, 64)
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
