// Package control is the control API of every data plane of the fault
// proxy (HTTP, TCP, PostgreSQL): the same routes, answers and guard over a
// plane's own fault type, and the client call that puts a fault set.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// MaxBody caps the size of a control request body.
const MaxBody = 1 << 20

// Plane is what the control API needs of a data plane whose faults are F.
type Plane[F any] interface {
	// Faults returns a copy of the current fault set.
	Faults() []F
	// SetFaults validates fs and, if valid, replaces the set.
	SetFaults(fs []F) error
	// ClearFaults removes every fault.
	ClearFaults()
}

// Handler returns the control API of p:
//
//	GET    /faults   → 200 {"faults":[...]}
//	PUT    /faults   {"faults":[...]} → 200 with the new state, or 400
//	                 {"error":"faults[0].percent: ..."}; 413 if the body
//	                 exceeds MaxBody
//	DELETE /faults   → 200 {"faults":[]}
//	GET    /healthz  → 200 "ok"
//	GET    /metrics  → the Prometheus metrics of reg
//
// parse decodes a PUT body (strictly, with errors naming the field). Its
// handlers never wait on the data plane. The guard of every control
// surface is in front of them (see internal/ctlauth), with token. Safe for
// concurrent use.
func Handler[F any](p Plane[F], parse func(io.Reader) ([]F, error), reg *prometheus.Registry, token string) http.Handler {
	get := func(w http.ResponseWriter, r *http.Request) {
		fs := p.Faults()
		if fs == nil {
			fs = []F{}
		}
		WriteJSON(w, http.StatusOK, faultsBody[F]{Faults: fs})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", get)
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			WriteJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "body: larger than " + strconv.Itoa(MaxBody) + " bytes"})
			return
		case err != nil:
			WriteJSON(w, http.StatusBadRequest, errorBody{Error: "body: " + err.Error()})
			return
		}
		fs, err := parse(bytes.NewReader(body))
		if err == nil {
			err = p.SetFaults(fs)
		}
		if err != nil {
			WriteJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
			return
		}
		get(w, r)
	})
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		p.ClearFaults()
		get(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return ctlauth.Guard(mux, token)
}

// faultsBody is the JSON of a fault set: a PUT body, and the answer to
// every /faults call.
type faultsBody[F any] struct {
	Faults []F `json:"faults"`
}

// errorBody is the JSON of a control error answer.
type errorBody struct {
	Error string `json:"error"`
}

// Body encodes fs as a PUT /faults body; nil is the empty set.
func Body[F any](fs []F) ([]byte, error) {
	if fs == nil {
		fs = []F{}
	}
	return json.Marshal(faultsBody[F]{Faults: fs})
}

// ErrorMessage is the message of a control error answer's body b, or b
// itself when it is not one.
func ErrorMessage(b []byte) string {
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
		return strings.TrimSpace(string(b))
	}
	return eb.Error
}

// WriteJSON writes v as a control API answer: JSON with status, never
// cached; a value that cannot be encoded is answered 500.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Put replaces the faults of the proxy whose control API is at base
// ("http://host:port" or "host:port") with fs, through PUT /faults; a nil
// hc means http.DefaultClient. name prefixes the errors ("tcpproxy
// control"); a 400's message is in the error, which then wraps invalid.
func Put[F any](ctx context.Context, hc *http.Client, base string, fs []F, name string, invalid error) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	body, err := Body(fs)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(base, "/")+"/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json") // a command must say so (see internal/ctlauth)
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	switch {
	case res.StatusCode == http.StatusOK:
		return nil
	case res.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("%s: %w: %s", name, invalid, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("%s: %s: %s", name, res.Status, bytes.TrimSpace(msg))
}
