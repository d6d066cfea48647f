package faultproxy

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/payload"
)

// TypePayload is the payload fault: an affected request is answered 200
// with a JSON document of about Size bytes (payload.JSON: an array of small
// records; Content-Type application/json) instead of the upstream's answer,
// so that a caller that decodes its dependency's JSON spends CPU and GC on
// it. Like the error fault it is terminal: the upstream is not called; a
// latency fault in the same set delays it first, so
// [{latency 10ms}, {payload 256KiB}] is a dependency that answers in 10 ms
// with a large body.
const TypePayload = "payload"

// MinPayloadBytes and MaxPayloadBytes bound a payload fault's Size.
const (
	MinPayloadBytes = 2
	MaxPayloadBytes = payload.Max
)

// payloadSeed seeds every payload fault's document: the same size gives the
// same bytes in every proxy and run.
const payloadSeed = 0x5eed

// payloadType is the payload fault type.
type payloadType struct{ terminal }

// Payload is the parameters of a payload fault.
type Payload struct {
	// Size is the document's length in bytes (MinPayloadBytes–
	// MaxPayloadBytes).
	Size int `fault:"size,bytes"`
}

func (payloadType) name() string { return TypePayload }
func (payloadType) params() any  { return Payload{} }

func (payloadType) validate(fl *Fault, field string) error {
	f := params[Payload](fl)
	if f.Size < MinPayloadBytes || f.Size > MaxPayloadBytes {
		return fieldErr(field+".size", "must be between %d and %d bytes, got %d", MinPayloadBytes, MaxPayloadBytes, f.Size)
	}
	return nil
}

func (payloadType) normalized(f Fault) Fault { return f }

// hold: the proxy answers at once (a large answer, but no wait).
func (payloadType) hold(*Fault, int64) Hold { return Hold{Kind: HoldEnds} }

// counterparts: none, a document of the HTTP plane's.
func (payloadType) counterparts() map[string]counterpart { return nil }

func (payloadType) describe(f *Fault) string {
	return fmt.Sprintf("payload: 200 with a JSON document of %d bytes", params[Payload](f).Size)
}

func (payloadType) example() Fault {
	return Fault{Type: TypePayload, Percent: 30, Params: Payload{Size: 256 << 10}}
}

// prepare builds the fault's document, once per set.
func (payloadType) prepare(f *Fault) any { return payload.JSON(params[Payload](f).Size, payloadSeed) }

// body is the document of the answer's fault.
func (payloadType) body(a *answer) []byte { return a.set.prepared[a.d.Terminal].([]byte) }

func (t payloadType) answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer) {
	a.e.Status = http.StatusOK
	p.record(r, a.d, a.e)
	writePayload(w, t.body(&a))
}

func (t payloadType) answerRaw(p *Proxy, c *rconn, a answer) bool {
	a.e.Status = http.StatusOK
	p.recordID(c.req.requestID, a.d, a.e)
	return c.writePayload(t.body(&a))
}

// writePayload answers 200 with body, a payload fault's document; the
// upstream is not called.
func writePayload(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", payload.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writePayload answers the raw plane's request with body, a payload
// fault's document. It reports whether the connection may serve another
// request.
func (c *rconn) writePayload(body []byte) bool {
	c.answering()
	bw := c.bw
	bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: " + payload.ContentType + "\r\n")
	writeHeaderLine(bw, "Date", time.Now().UTC().Format(http.TimeFormat))
	writeHeaderLine(bw, "Content-Length", strconv.Itoa(len(body)))
	keep := c.req.keepAfter()
	if !keep {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if string(c.req.line[0]) != http.MethodHead {
		bw.Write(body)
	}
	return bw.Flush() == nil && keep
}
