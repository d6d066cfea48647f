package pgproxy

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth/ctlauthtest"
)

// TestControlGuard: with a token, a foreign client can neither set, clear
// nor read the faults, with or without the right Host; the runner can.
func TestControlGuard(t *testing.T) {
	tok := ctlauth.NewToken()
	e := newEnv(t, "127.0.0.1:1", Config{Token: tok})
	base := "http://" + e.srv.ControlAddr()
	set := ctlauthtest.Command{Method: "PUT", Path: "/faults", Body: `{"faults":[{"type":"error","code":"57014"}]}`}
	ctlauthtest.Refuses(t, base, tok, []ctlauthtest.Command{set, {Method: "DELETE", Path: "/faults"},
		{Method: "GET", Path: "/faults"}, {Method: "GET", Path: "/metrics"}})
	if fs := e.p.Faults(); len(fs) != 0 {
		t.Fatalf("after the foreign clients the proxy has faults %v", fs)
	}
	if code, body := ctlauthtest.Do(t, base, tok, set); code != 200 || len(e.p.Faults()) != 1 {
		t.Fatalf("PUT /faults with the token: %d %s, faults %v", code, body, e.p.Faults())
	}
}
