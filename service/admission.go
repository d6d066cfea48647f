package service

import (
	"net/http"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Admission stages run in front of an endpoint's own handler (its pool,
// or its policy stack) and may refuse a request before it takes anything
// of the endpoint's: the heap guard (Config.MaxHeapBytes), the tenant
// stage (Config.Tenants) and the priority stage (Config.Priority), in
// that order. A refusal of a stage is a 503 with X-Bulkhead-Reject naming
// it, so that a load generator counts it with the other rejections.

// Values of X-Bulkhead-Reject for the refusals of the admission stages
// (the pools' are full and wait-timeout).
const (
	RejectTenant   = "tenant"   // over the tenant's share (partition or cap)
	RejectPriority = "priority" // a sheddable call over its class's share of the pool
)

// Answer outcomes of the admission stages' metrics (the outcome label of
// bulkheadlab_tenant_requests_total and bulkheadlab_priority_requests_total):
// what the request's answer was, read from its status and headers.
const (
	answerOK        = "ok"
	answerTimeout   = "timeout"    // 504: the dependency call ran out of time
	answerError     = "error"      // 502: the dependency failed
	answerOverShare = "over_share" // refused by the stage itself (its tenant's or class's share)
	answerRejected  = "rejected"   // refused by another stage or a pool (503 with X-Bulkhead-Reject)
	answerCancelled = "cancelled"  // the client went away
	answerOther     = "other"      // any other answer (a breaker's 503, a 400)
)

// answerOutcomes lists the outcomes, for exporting zeros from the start.
var answerOutcomes = []string{answerOK, answerTimeout, answerError, answerOverShare, answerRejected, answerCancelled, answerOther}

// statusWriter records the status an inner handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// answerOutcome names the outcome of an answer given with status (and w's
// headers) to r.
func answerOutcome(w http.ResponseWriter, status int, r *http.Request) string {
	switch {
	case status == http.StatusOK:
		return answerOK
	case status == http.StatusGatewayTimeout:
		return answerTimeout
	case status == http.StatusBadGateway:
		return answerError
	case status == http.StatusServiceUnavailable && w.Header().Get(rundata.HeaderBulkheadReject) != "":
		return answerRejected
	case r.Context().Err() != nil:
		return answerCancelled
	}
	return answerOther
}

// serveObserved serves r with h and returns the answer's outcome.
func serveObserved(h http.Handler, w http.ResponseWriter, r *http.Request) string {
	sw := &statusWriter{ResponseWriter: w}
	h.ServeHTTP(sw, r)
	return answerOutcome(w, sw.status, r)
}

// writeOverShare answers a request an admission stage refused: 503 with
// X-Bulkhead-Reject: reason, at once.
func writeOverShare(w http.ResponseWriter, reason, msg string) {
	w.Header().Set(rundata.HeaderBulkheadReject, reason)
	writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: msg, Reason: reason})
}

// admit puts the service's admission stages in front of endpoint name's
// handler h.
func (s *Service) admit(name string, h http.Handler) http.Handler {
	if s.priority != nil {
		h = s.priority.wrap(name, h)
	}
	if s.tenants != nil {
		h = s.tenants.wrap(h)
	}
	if s.heapGuard != nil {
		h = s.heapGuard.wrap(h)
	}
	return h
}
