package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// MaxControlBody caps the size of a control request body.
const MaxControlBody = 1 << 20

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
// application/json 415. Safe for concurrent use.
func (p *Proxy) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", p.getFaults)
	mux.HandleFunc("PUT /faults", p.putFaults)
	mux.HandleFunc("DELETE /faults", p.deleteFaults)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.m.reg, promhttp.HandlerOpts{}))
	return ctlauth.Guard(mux, p.token)
}

func (p *Proxy) getFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, faultsBody{Faults: p.Faults()})
}

func (p *Proxy) putFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxControlBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "body: larger than " + itoa(MaxControlBody) + " bytes"})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "body: " + err.Error()})
		return
	}
	fs, err := ParseFaults(bytes.NewReader(body))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	if err := p.SetFaults(fs); err != nil { // cannot fail after ParseFaults; kept for safety
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	p.getFaults(w, r)
}

func (p *Proxy) deleteFaults(w http.ResponseWriter, r *http.Request) {
	p.ClearFaults()
	p.getFaults(w, r)
}

// faultsBody is the JSON of GET/PUT /faults responses.
type faultsBody struct {
	Faults []Fault `json:"faults"`
}

// errorBody is the JSON of a control error response.
type errorBody struct {
	Error string `json:"error"`
}

// WriteJSON writes v as a control API answer: JSON with status, never
// cached; a value that cannot be encoded is answered 500. The TCP data
// plane's control API answers through it too.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// marshalFaults encodes fs as a control body.
func marshalFaults(fs []Fault) ([]byte, error) {
	if fs == nil {
		fs = []Fault{}
	}
	return json.Marshal(faultsBody{Faults: fs})
}
