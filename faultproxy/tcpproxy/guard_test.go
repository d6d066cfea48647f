package tcpproxy

import (
	"context"
	"io"
	"log"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth/ctlauthtest"
)

// TestControlGuard: with a token, a foreign client can neither set, clear
// nor read the faults, with or without the right Host; the runner can.
func TestControlGuard(t *testing.T) {
	tok := ctlauth.NewToken()
	p, err := New(Config{Upstream: "127.0.0.1:1", Seed: 1, Token: tok, ErrorLog: log.New(io.Discard, "", 0)})
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
	base := "http://" + srv.ControlAddr()
	set := ctlauthtest.Command{Method: "PUT", Path: "/faults", Body: `{"faults":[{"type":"down"}]}`}
	ctlauthtest.Refuses(t, base, tok, []ctlauthtest.Command{set, {Method: "DELETE", Path: "/faults"},
		{Method: "GET", Path: "/faults"}, {Method: "GET", Path: "/metrics"}})
	if fs := p.Faults(); len(fs) != 0 {
		t.Fatalf("after the foreign clients the proxy has faults %v", fs)
	}
	if code, body := ctlauthtest.Do(t, base, tok, set); code != 200 || len(p.Faults()) != 1 {
		t.Fatalf("PUT /faults with the token: %d %s, faults %v", code, body, p.Faults())
	}
}
