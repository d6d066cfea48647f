package faultproxy

import (
	"net/http"
	"strconv"
	"strings"
)

// DefaultErrorStatus is the status of an error fault that names none.
const DefaultErrorStatus = http.StatusServiceUnavailable

func validateError(f Fault, field string) error {
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

func normalizeError(f Fault) Fault {
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

// noErrorFields rejects error parameters on other fault types.
func noErrorFields(f Fault, field string) error {
	switch {
	case f.Status != 0:
		return fieldErr(field+".status", "only valid for type error")
	case f.Body != "":
		return fieldErr(field+".body", "only valid for type error")
	case len(f.Headers) != 0:
		return fieldErr(field+".headers", "only valid for type error")
	}
	return nil
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
