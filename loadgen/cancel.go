package loadgen

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Cancel makes a share of a target's requests in a phase give up After
// their send: the client closes its connection, so the service sees its
// client go away mid-request.
//
// Which requests is a seeded choice per request (its sequence number
// hashed with Config.Seed and the target's name), so a run with the same
// seed gives up on the same requests; a request belongs to the phase of
// its intended send time. A request given up on is classified
// client_timeout whatever the target's rules say and counted in
// Window.Cancelled and PhaseStats.Cancelled as well; a chosen request
// answered before After is an ordinary result. For a retrying client,
// After runs over all attempts. Cancelled requests are neither harness
// errors nor unhealthy: they are left out of the health rule's shares.
type Cancel struct {
	// Share is the share of the requests given up on, in (0, 1].
	Share float64
	// After is how long after its send a request is given up on: > 0 and
	// below the client timeout, which would end it first.
	After time.Duration
}

// errGaveUp is the cause of a request's context when the client gave up on
// it on purpose.
var errGaveUp = fmt.Errorf("loadgen: the client gave up on purpose: %w", context.DeadlineExceeded)

// validateCancels checks a phase's Cancel against the targets, in name
// order so that the error is deterministic.
func (p *plan) validateCancels(field string, ph Phase) error {
	for _, name := range slices.Sorted(maps.Keys(ph.Cancel)) {
		c, f := ph.Cancel[name], field+"."+name
		ti := slices.IndexFunc(p.cfg.Targets, func(t Target) bool { return t.Name == name })
		switch {
		case ti < 0:
			return invalid(f, "phase %q: %q is not a target name", ph.Name, name)
		case p.cfg.Targets[ti].Canary:
			return invalid(f, "phase %q: target %q is a canary, whose requests are not given up on", ph.Name, name)
		case !(c.Share > 0 && c.Share <= 1):
			return invalid(f+".share", "phase %q, target %q: %v is not in (0, 1]", ph.Name, name, c.Share)
		case c.After <= 0:
			return invalid(f+".after", "phase %q, target %q: %v is not positive", ph.Name, name, c.After)
		case c.After >= p.timeout:
			return invalid(f+".after", "phase %q, target %q: %v is not below the client timeout %v, which would end the requests first",
				ph.Name, name, c.After, p.timeout)
		}
	}
	return nil
}

// cancelsOf returns target t's Cancel per phase, or nil when no phase has one.
func (p *plan) cancelsOf(t Target) []Cancel {
	var out []Cancel
	for i, ph := range p.cfg.Phases {
		if c, ok := ph.Cancel[t.Name]; ok {
			if out == nil {
				out = make([]Cancel, len(p.cfg.Phases))
			}
			out[i] = c
		}
	}
	return out
}

// cancelSeed is target name's stream of the choice of Config.Seed.
func cancelSeed(seed int64, name string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "cancel/%d/%s", seed, name)
	return h.Sum64()
}

// mix64 is SplitMix64's finalizer: a bijection that spreads every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// chosen reports whether request seq of the stream seed is among share of
// the requests: its hash, uniform in [0, 1), is below share.
func chosen(seed, seq uint64, share float64) bool {
	return float64(mix64(seed^mix64(seq))>>11)/(1<<53) < share
}

// giveUpTransport is the client's outermost layer for a target with
// cancels: it ends the chosen requests' context After their send, and
// remembers which requests it gave up on until their result is forwarded.
type giveUpTransport struct {
	next    http.RoundTripper
	sched   schedule
	spans   []phaseSpan
	cancels []Cancel // per phase; a zero Share gives up on none
	seed    uint64
	gaveUp  sync.Map // request seq → struct{}
}

// cancelFor returns the Cancel that applies to req and its seq, if it is chosen.
func (t *giveUpTransport) cancelFor(req *http.Request) (Cancel, uint64, bool) {
	seq, err := strconv.ParseUint(req.Header.Get("X-Vegeta-Seq"), 10, 64)
	if err != nil || seq >= uint64(t.sched.total) {
		return Cancel{}, 0, false
	}
	pi := phaseIndexOf(t.spans, t.sched.at(int64(seq)))
	if pi < 0 || t.cancels[pi].Share == 0 || !chosen(t.seed, seq, t.cancels[pi].Share) {
		return Cancel{}, 0, false
	}
	return t.cancels[pi], seq, true
}

func (t *giveUpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, seq, ok := t.cancelFor(req)
	if !ok {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeoutCause(req.Context(), c.After, errGaveUp)
	note := func() {
		if errors.Is(context.Cause(ctx), errGaveUp) {
			t.gaveUp.Store(seq, struct{}{})
		}
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		note()
		cancel()
		return nil, err
	}
	resp.Body = &giveUpBody{ReadCloser: resp.Body, note: note, cancel: cancel}
	return resp, nil
}

// took reports whether the client gave up on request seq on purpose, and
// forgets it: called once per result, after the request has ended.
func (t *giveUpTransport) took(seq uint64) bool {
	if t == nil {
		return false
	}
	_, ok := t.gaveUp.LoadAndDelete(seq)
	return ok
}

// giveUpBody notes a body that the client gave up on while reading, and
// ends the request's context when closed.
type giveUpBody struct {
	io.ReadCloser
	note   func()
	cancel context.CancelFunc
	once   sync.Once
}

func (b *giveUpBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.note()
	}
	return n, err
}

func (b *giveUpBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.cancel)
	return err
}
