package faultproxy

import (
	"net/http"
	"strconv"
	"strings"
)

// TypeError is the error fault: an affected request is answered at once
// with Status, Body and Headers; the upstream is not called.
const TypeError = "error"

// DefaultErrorStatus is the status of an error fault that names none.
const DefaultErrorStatus = http.StatusServiceUnavailable

// errorType is the error fault type.
type errorType struct{ terminal }

func (errorType) name() string     { return TypeError }
func (errorType) params() []string { return errorParams }

// errorParams are an error fault's answer fields.
var errorParams = []string{"status", "body", "headers"}

func (errorType) validate(f *Fault, field string) error {
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

func (errorType) normalized(f Fault) Fault {
	if f.Status == 0 {
		f.Status = DefaultErrorStatus
	}
	if len(f.Headers) == 0 {
		f.Headers = nil
		return f
	}
	h := make(map[string]string, len(f.Headers)) // own copy: the set is immutable
	for k, v := range f.Headers {
		h[k] = v
	}
	f.Headers = h
	return f
}

func (errorType) answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer) {
	f := a.fault()
	a.e.Status = f.Status
	p.record(r, a.d, a.e)
	writeError(w, *f)
}

func (errorType) answerRaw(p *Proxy, c *rconn, a answer) bool {
	f := a.fault()
	a.e.Status = f.Status
	p.recordID(c.req.requestID, a.d, a.e)
	return c.writeFault(f)
}

// writeError answers with the error fault f; the upstream is not called.
func writeError(w http.ResponseWriter, f Fault) {
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
