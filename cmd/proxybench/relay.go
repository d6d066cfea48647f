package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// runRelay is the child mode `proxybench relay HOST:PORT`: a bare TCP relay
// in front of the upstream, the floor of the pass-through comparison. Per
// client connection it dials the upstream and copies bytes both ways, one
// goroutine per direction, one read and one write per chunk (no splice, no
// parsing, no decisions): what any user-space proxy on this machine pays at
// least. It prints {"addr":"host:port"} as its first stdout line and
// relays until SIGTERM or SIGINT.
func runRelay(upstream string) error {
	return serveAnnounced(func(ctx context.Context, c net.Conn) { relayConn(ctx, c, upstream) })
}

// serveAnnounced listens on 127.0.0.1:0, prints {"addr":"host:port"} as
// its first stdout line and serves each connection with handle in a
// goroutine of its own until SIGTERM or SIGINT, then waits for them.
func serveAnnounced(handle func(ctx context.Context, c net.Conn)) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, func() { l.Close() })
	b, _ := json.Marshal(map[string]string{"addr": l.Addr().String()})
	if _, err := fmt.Fprintf(os.Stdout, "%s\n", b); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Go(func() { handle(ctx, c) })
	}
}

// relayConn relays between c and a new connection to upstream until
// either side ends or ctx is done, then closes both.
func relayConn(ctx context.Context, c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); u.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		// Plain Reader and Writer: io.CopyBuffer would otherwise hand
		// TCP to TCP to splice(2), which a proxy that looks at the bytes
		// cannot use.
		_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	c.Close()
	u.Close()
	<-done
}
