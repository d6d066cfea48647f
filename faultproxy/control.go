package faultproxy

import (
	"net/http"
	"strconv"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/control"
)

// MaxControlBody caps the size of a control request body.
const MaxControlBody = control.MaxBody

// ControlHandler returns the control API:
//
//	GET    /faults   → 200 {"faults":[...]}
//	PUT    /faults   {"faults":[...]} → 200 with the new state, or 400
//	                 {"error":"faults[0].percent: ..."}; 413 if the body
//	                 exceeds MaxControlBody
//	DELETE /faults   → 200 {"faults":[]}
//	GET    /healthz  → 200 "ok"
//	GET    /metrics  → Prometheus metrics of this proxy
//
// Its handlers never wait on the data plane: they read or swap the fault
// set atomically. Every control surface's guard is in front of them (see
// internal/ctlauth): a Host or Origin that names a host other than an IP
// address or localhost is refused 403, a request without Config.Token
// (when set) 401 except GET /healthz, a command whose Content-Type is not
// application/json 415. The TCP and PostgreSQL planes serve the same API
// (faultproxy/internal/control) over their own faults. Safe for concurrent
// use.
func (p *Proxy) ControlHandler() http.Handler {
	return control.Handler[Fault](p, ParseFaults, p.m.reg, p.token)
}

// WriteJSON writes v as a control API answer: JSON with status, never
// cached; a value that cannot be encoded is answered 500.
func WriteJSON(w http.ResponseWriter, status int, v any) { control.WriteJSON(w, status, v) }

func writeJSON(w http.ResponseWriter, status int, v any) { control.WriteJSON(w, status, v) }

// errorBody is the JSON of a control error response.
type errorBody struct {
	Error string `json:"error"`
}

func itoa(n int) string { return strconv.Itoa(n) }

// marshalFaults encodes fs as a control body.
func marshalFaults(fs []Fault) ([]byte, error) { return control.Body(fs) }
