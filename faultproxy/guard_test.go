package faultproxy

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth/ctlauthtest"
)

// TestControlGuard: with a token, a foreign client can neither set, clear
// nor read the faults, with or without the right Host; the runner can.
func TestControlGuard(t *testing.T) {
	tok := ctlauth.NewToken()
	e := newEnv(t, func(c *Config) { c.Token = tok })
	base := "http://" + e.srv.ControlAddr()
	set := ctlauthtest.Command{Method: "PUT", Path: "/faults", Body: `{"faults":[{"type":"error","percent":100,"status":503}]}`}
	ctlauthtest.Refuses(t, base, tok, []ctlauthtest.Command{set, {Method: "DELETE", Path: "/faults"},
		{Method: "GET", Path: "/faults"}, {Method: "GET", Path: "/metrics"}})
	if fs := e.p.Faults(); len(fs) != 0 {
		t.Fatalf("after the foreign clients the proxy has faults %v", fs)
	}
	if code, body := ctlauthtest.Do(t, base, tok, set); code != 200 || len(e.p.Faults()) != 1 {
		t.Fatalf("PUT /faults with the token: %d %s, faults %v", code, body, e.p.Faults())
	}
	if code, _ := ctlauthtest.Do(t, base, "", ctlauthtest.Command{Method: "GET", Path: "/healthz"}); code != 200 {
		t.Errorf("GET /healthz without a token: %d, want 200 (a readiness probe has none)", code)
	}
}
