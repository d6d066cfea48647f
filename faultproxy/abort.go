package faultproxy

import "net/http"

// TypeAbort is the abort fault: an affected request's connection is closed
// without a response; the caller sees EOF or a reset.
const TypeAbort = "abort"

// abortType is the abort fault type; it takes no parameters.
type abortType struct{ terminal }

func (abortType) name() string                          { return TypeAbort }
func (abortType) params() any                           { return nil }
func (abortType) validate(f *Fault, field string) error { return nil }
func (abortType) normalized(f Fault) Fault              { return f }
func (abortType) describe(*Fault) string                { return "abort: connection closed, no answer" }

func (abortType) example() Fault { return Fault{Type: TypeAbort, Percent: 5} }

// hold: the call fails at once.
func (abortType) hold(*Fault, int64) Hold { return Hold{Kind: HoldFails} }

// counterparts: as an error's, a reset or an ErrorResponse.
func (abortType) counterparts() map[string]counterpart { return failCounterparts(TypeAbort) }

func (abortType) answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer) {
	p.record(r, a.d, a.e)
	abort()
}

func (abortType) answerRaw(p *Proxy, c *rconn, a answer) bool {
	p.recordID(c.req.requestID, a.d, a.e)
	return false // the connection is closed
}

// abort closes the caller's connection without a response: the caller sees
// EOF or a reset. It panics with http.ErrAbortHandler, which net/http's
// server recovers silently after closing the connection (HTTP/1) or
// resetting the stream (HTTP/2). It never returns.
func abort() {
	panic(http.ErrAbortHandler)
}
