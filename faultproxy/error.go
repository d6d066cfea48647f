package faultproxy

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// TypeError is the error fault: an affected request is answered at once
// with Status, Body and Headers; the upstream is not called.
const TypeError = "error"

// DefaultErrorStatus is the status of an error fault that names none.
const DefaultErrorStatus = http.StatusServiceUnavailable

// Reply is the parameters of an error fault: the answer it gives.
type Reply struct {
	// Status is the HTTP status, 200–599; zero means DefaultErrorStatus.
	Status int `fault:"status" default:"503" want:"an HTTP status 200–599"`
	// Body is the answer's body.
	Body string `fault:"body"`
	// Headers are added to the answer.
	Headers map[string]string `fault:"headers"`
}

// errorType is the error fault type.
type errorType struct{ terminal }

func (errorType) name() string { return TypeError }
func (errorType) params() any  { return Reply{} }

func (errorType) validate(fl *Fault, field string) error {
	f := params[Reply](fl)
	if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		return fieldErr(field+".status", "must be an HTTP status within 200–599, got %d", f.Status)
	}
	if len(f.Body) > MaxBodyBytes {
		return fieldErr(field+".body", "at most %d bytes, got %d", MaxBodyBytes, len(f.Body))
	}
	if len(f.Headers) > MaxHeaders {
		return fieldErr(field+".headers", "at most %d headers, got %d", MaxHeaders, len(f.Headers))
	}
	for k, v := range f.Headers {
		if !validHeaderName(k) {
			return fieldErr(field+".headers", "invalid header name %q", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fieldErr(field+".headers["+strconv.Quote(k)+"]", "value must not contain CR, LF or NUL")
		}
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection":
			return fieldErr(field+".headers", "header %q is set by the proxy", k)
		}
	}
	return nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func (errorType) normalized(fl Fault) Fault {
	f := params[Reply](&fl)
	if f.Status == 0 {
		f.Status = DefaultErrorStatus
	}
	if len(f.Headers) == 0 {
		f.Headers = nil
	} else {
		f.Headers = maps.Clone(f.Headers) // own copy: the set is immutable
	}
	fl.Params = f
	return fl
}

// hold: the call fails at once.
func (errorType) hold(*Fault, int64) Hold { return Hold{Kind: HoldFails} }

// counterparts: the TCP plane resets the connection as soon as a request
// arrives, the PostgreSQL plane answers the query with an ErrorResponse
// (a spec gives its SQLSTATE).
func (errorType) counterparts() map[string]counterpart { return failCounterparts(TypeError) }

// failCounterparts are the counterparts of a fault that fails a call at
// once (error, abort).
func failCounterparts(typ string) map[string]counterpart {
	return map[string]counterpart{
		PlaneTCP: func(*Fault) (map[string]any, error) {
			return map[string]any{"type": "reset", "stream": "upstream"}, nil
		},
		PlanePostgres: func(*Fault) (map[string]any, error) {
			return map[string]any{"type": "error", "message": "injected by the fault proxy (" + typ + ")"}, nil
		},
	}
}

func (errorType) describe(f *Fault) string {
	r := params[Reply](f)
	return fmt.Sprintf("error %d at once", cmp.Or(r.Status, DefaultErrorStatus))
}

func (errorType) example() Fault {
	return Fault{Type: TypeError, Percent: 10, Params: Reply{Status: 503, Body: "injected"}}
}

func (errorType) answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer) {
	f := params[Reply](a.fault())
	a.e.Status = f.Status
	p.record(r, a.d, a.e)
	writeError(w, f)
}

func (errorType) answerRaw(p *Proxy, c *rconn, a answer) bool {
	f := params[Reply](a.fault())
	a.e.Status = f.Status
	p.recordID(c.req.requestID, a.d, a.e)
	return c.writeReply(&f)
}

// writeError answers with the error fault's reply f; the upstream is not
// called.
func writeError(w http.ResponseWriter, f Reply) {
	h := w.Header()
	for k, v := range f.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(f.Body)))
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(f.Body))
}
