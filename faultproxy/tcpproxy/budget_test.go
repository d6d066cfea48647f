package tcpproxy

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestConnectionBudget: beyond MaxConns, clients wait in the listen queue
// (no upstream connection for them) while the control API answers; when a
// client leaves, the next one is served.
func TestConnectionBudget(t *testing.T) {
	const budget, clients = 3, 6
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, clients)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var ups []net.Conn
	defer func() {
		ul.Close()
		for c := range accepted {
			ups = append(ups, c)
		}
		for _, c := range ups {
			c.Close()
		}
	}()
	p, err := New(Config{Upstream: ul.Addr().String(), Seed: 1, MaxConns: budget, HalfOpenTimeout: 100 * time.Millisecond, ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	var cs []net.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.DialTimeout("tcp", srv.Addr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case c := <-accepted:
			ups = append(ups, c)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no upstream connection within 5 s", what)
		}
	}
	for i := range budget {
		wait("client " + string(rune('1'+i)))
	}
	select { // a bounded look for a connection beyond the budget
	case c := <-accepted:
		ups = append(ups, c)
		t.Fatalf("%d upstream connections with a budget of %d", len(ups), budget)
	case <-time.After(200 * time.Millisecond):
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + srv.ControlAddr() + "/faults")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /faults at the budget: %v %v", resp, err)
	}
	resp.Body.Close()
	cs[0].Close()
	wait("after a client left")
}
