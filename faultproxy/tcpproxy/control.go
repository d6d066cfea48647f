package tcpproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// ControlHandler returns the control API, the HTTP plane's routes with the
// TCP faults:
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
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", p.getFaults)
	mux.HandleFunc("PUT /faults", p.putFaults)
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		p.ClearFaults()
		p.getFaults(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.m.reg, promhttp.HandlerOpts{}))
	return ctlauth.Guard(mux, p.token)
}

func (p *Proxy) getFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string][]Fault{"faults": p.Faults()})
}

func (p *Proxy) putFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, faultproxy.MaxControlBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body: larger than " + strconv.Itoa(faultproxy.MaxControlBody) + " bytes"})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
		return
	}
	fs, err := ParseFaults(bytes.NewReader(body))
	if err == nil {
		err = p.SetFaults(fs)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	p.getFaults(w, r)
}

// writeJSON answers as the HTTP plane's control API does.
var writeJSON = faultproxy.WriteJSON
