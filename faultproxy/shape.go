package faultproxy

import (
	"bufio"
	"io"
	"net/http"
)

// The shaping step of the combination rule: when a request is forwarded,
// the faults of a shaping role (roleShape) that fired on it change how the
// upstream's answer reaches the client. Its head goes out as it comes; its
// body is written through each of them, in list order, on both data
// planes, and the request is in flight until its body is out.

// bodyShaper is a fault type that shapes the body of an answer relayed
// from the upstream.
type bodyShaper interface {
	// shapeBody returns the writer through which the body goes to out. It
	// may wait between writes; it gives up (with an error) once out.stop
	// or out.gone is closed.
	shapeBody(f *Fault, out bodyOut) io.Writer
}

// bodyOut is where an answer's body goes: w, which flush sends on to the
// client, while neither stop (the proxy closes) nor gone (the client went
// away; nil when not watched) is closed.
type bodyOut struct {
	w          io.Writer
	flush      func() error
	stop, gone <-chan struct{}
}

func (o bodyOut) Write(b []byte) (int, error) { return o.w.Write(b) }

// shapeBody returns out through every shaping fault of set that fired (d),
// the first one writing to the second..., the last one to out. It counts
// each as injected.
func (p *Proxy) shapeBody(set *faultSet, d Decision, out bodyOut) io.Writer {
	var w io.Writer = out
	for i := len(set.faults) - 1; i >= 0; i-- {
		if d.Shaped&(1<<i) == 0 {
			continue
		}
		f := &set.faults[i]
		p.m.injected[f.Type].Inc()
		w = set.shapers[i].shapeBody(f, bodyOut{w: w, flush: out.flush, stop: out.stop, gone: out.gone})
	}
	return w
}

// shapedResponse is the net/http plane's ResponseWriter of a forwarded
// answer whose body shaping faults shape.
type shapedResponse struct {
	http.ResponseWriter
	body io.Writer
}

// shapeHTTP returns w with the body shaped by the shaping faults that fired
// on r (d); w itself when none did.
func (p *Proxy) shapeHTTP(set *faultSet, d Decision, w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if d.Shaped == 0 {
		return w
	}
	fl, _ := w.(http.Flusher)
	flush := func() error {
		if fl != nil {
			fl.Flush()
		}
		return nil
	}
	return &shapedResponse{ResponseWriter: w, body: p.shapeBody(set, d, bodyOut{w: w, flush: flush, stop: p.stop, gone: r.Context().Done()})}
}

func (s *shapedResponse) Write(b []byte) (int, error) { return s.body.Write(b) }

// Flush sends on what the body's writer has written.
func (s *shapedResponse) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (s *shapedResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// shaping is what the raw plane's relay of a forwarded answer needs to
// shape its body: the set and the decision (no shaping fault fired: zero).
type shaping struct {
	set *faultSet
	d   Decision
}

// bodyWriter returns the writer of the body of the answer relayed on c: c's
// own, or, when shaping faults fired, one through them to it.
func (p *Proxy) bodyWriter(c *rconn, sh shaping) *bufio.Writer {
	if sh.d.Shaped == 0 {
		return c.bw
	}
	return bufio.NewWriter(p.shapeBody(sh.set, sh.d, bodyOut{w: c.bw, flush: c.bw.Flush, stop: p.stop}))
}
