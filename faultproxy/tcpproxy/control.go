package tcpproxy

import (
	"net/http"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/control"
)

// ControlHandler returns the control API, the HTTP plane's routes and
// answers (faultproxy/internal/control) with the TCP faults:
//
//	GET    /faults   → 200 {"faults":[...]}
//	PUT    /faults   {"faults":[...]} → 200 with the new state, or 400
//	                 {"error":"faults[0].stream: ..."}; 413 beyond
//	                 faultproxy.MaxControlBody
//	DELETE /faults   → 200 {"faults":[]}
//	GET    /healthz  → 200 "ok"
//	GET    /metrics  → Prometheus metrics of this proxy
//
// It is guarded as the HTTP plane's is (see internal/ctlauth and
// Config.Token). Safe for concurrent use.
func (p *Proxy) ControlHandler() http.Handler {
	return control.Handler[Fault](p, ParseFaults, p.m.reg, p.token)
}
