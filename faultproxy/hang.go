package faultproxy

import (
	"context"
	"net/http"
)

// TypeHang is the hang fault: an affected request is sent nothing until
// its caller gives up or the proxy closes.
const TypeHang = "hang"

// hangType is the hang fault type; it takes no parameters.
type hangType struct{ terminal }

func (hangType) name() string                          { return TypeHang }
func (hangType) params() any                           { return nil }
func (hangType) validate(f *Fault, field string) error { return nil }
func (hangType) normalized(f Fault) Fault              { return f }
func (hangType) describe(*Fault) string                { return "hang: never answered" }

func (hangType) example() Fault { return Fault{Type: TypeHang, Percent: 1} }

// hold: the call ends when its caller gives up.
func (hangType) hold(*Fault, int64) Hold { return Hold{Kind: HoldNever} }

// counterparts: the TCP plane drops the data both ways and never closes
// (the caller's own deadline ends the wait), the PostgreSQL plane never
// answers the query.
func (hangType) counterparts() map[string]counterpart {
	return map[string]counterpart{
		PlaneTCP: func(*Fault) (map[string]any, error) {
			return map[string]any{"type": "timeout", "stream": "both"}, nil
		},
		PlanePostgres: func(*Fault) (map[string]any, error) {
			return map[string]any{"type": "hang"}, nil
		},
	}
}

func (hangType) answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer) {
	p.record(r, a.d, a.e)
	if hang(r.Context(), p.stop) {
		abort()
	}
	p.m.cancelled.Inc()
}

// answerRaw watches the client until it goes away or the proxy closes; the
// connection is closed either way.
func (hangType) answerRaw(p *Proxy, c *rconn, a answer) bool {
	p.recordID(c.req.requestID, a.d, a.e)
	gone := make(chan struct{})
	stop := c.watch(func() { close(gone) })
	select {
	case <-gone:
		p.m.cancelled.Inc()
	case <-p.stop:
	}
	stop()
	return false
}

// hang blocks, sending nothing, until the caller goes away (ctx done) or
// the proxy closes (stop closed). It reports whether it ended because of
// stop, in which case the caller aborts the connection.
func hang(ctx context.Context, stop <-chan struct{}) (stopped bool) {
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return true
	}
}
