package loadgen

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Limits of Burst.
const (
	// MaxBurstRequests caps Burst.Requests. Every request of a burst has a
	// connection of its own, open from its dial to its answer, on both
	// sides of it.
	MaxBurstRequests = 2000
	// BurstDialLead is how long before its instant a burst opens its
	// connections: at At − BurstDialLead, or when Run starts if that is
	// later. A connection still opening at At writes its request as soon as
	// it is open (BurstStats.LateDials counts them), so a burst less than
	// BurstDialLead into the run may spread wider.
	BurstDialLead = 500 * time.Millisecond
)

// burstDialers is how many connections of a burst are dialed at once, so
// that a burst does not overflow the server's accept queue.
const burstDialers = 16

// Burst releases Requests requests to one target at one instant, on top of
// its schedule (still open-model: nothing waits for answers).
//
// Each request has a connection of its own, opened ahead of time (see
// BurstDialLead; round-robin over Target.URLs for a fleet), and a goroutine
// of its own blocked on one release, which a timer fires at At as the
// pacer's timer fires a scheduled send; each goroutine then writes its
// request (the target's method, URL, headers and body, with "Connection:
// close") and reads the whole response with the run's client timeout.
// Results are classified with the target's rules like scheduled ones, with
// latency from the request's write, but they are in no window and no phase:
// they are Report.Bursts, one rundata.BurstStats per burst.
//
// The spread is bounded by the writes themselves: a write on loopback
// does the receiving side's TCP work in the writer's system call, about
// 10 µs of CPU, so the spread grows with the burst, about 10 µs a
// request on a machine this size. Measured on 2
// shared cores against an in-process loopback server that answers at once
// (BenchmarkBurstSpread, the median of three runs of 7 bursts each), from
// the first write to the last: 50 requests 0.8 ms, 200 requests 3.7 ms,
// 1000 requests 10 ms (8–16 ms); the release itself came 0.1–0.6 ms after
// At. 1000 writes to a server that does not read, one goroutine each,
// took 6–12 ms on the same machine.
type Burst struct {
	// Label names the burst in the report ("probe-before"): unique, a plain
	// name (letters, digits, '_', '-', '.'; at most 64), so that it can name
	// a file.
	Label string
	// Target is a Target's Name (not a canary's).
	Target string
	// At is the instant of the release, as an offset from t0, inside the
	// run: in [0, the sum of the phase durations).
	At time.Duration
	// Requests is how many requests are released, in [1, MaxBurstRequests].
	Requests int
	// Method and Path, if set, replace the target's method and the path
	// and query of its URL: a request to the target's server other than
	// its own (the built-in service's POST /jobs?n=K, which enqueues K
	// jobs). Path begins with "/". A burst with its own method sends no
	// body; the target's headers and rules stay.
	Method string
	Path   string
}

var burstLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// burstPlan is a validated burst with the requests it writes.
type burstPlan struct {
	b       Burst
	cl      *Classifier
	reqs    []burstReq // one per URL of the target, used round-robin
	timeout time.Duration
}

// burstReq is a burst's request to one URL, ready to be written.
type burstReq struct {
	addr   string      // host:port to dial
	tls    *tls.Config // nil for http
	wire   []byte      // the serialized request
	method string
	url    string
}

// buildBursts validates cfg.Bursts against the targets and prepares their
// requests; errors name the burst by index and label.
func (p *plan) buildBursts() error {
	labels := map[string]bool{}
	for i, b := range p.cfg.Bursts {
		field := fmt.Sprintf("bursts[%d]", i)
		ti := slices.IndexFunc(p.cfg.Targets, func(t Target) bool { return t.Name == b.Target })
		switch {
		case !burstLabelRE.MatchString(b.Label):
			return invalid(field+".label", "%q is not a plain name (letters, digits, '_', '-', '.'; at most 64)", b.Label)
		case labels[b.Label]:
			return invalid(field+".label", "duplicate burst %q", b.Label)
		case ti < 0:
			return invalid(field+".target", "burst %q: %q is not a target name", b.Label, b.Target)
		case p.cfg.Targets[ti].Canary:
			return invalid(field+".target", "burst %q: %q is a canary", b.Label, b.Target)
		case b.At < 0 || b.At >= p.duration:
			return invalid(field+".at", "burst %q: %v is outside the run [0, %v)", b.Label, b.At, p.duration)
		case b.Requests < 1 || b.Requests > MaxBurstRequests:
			return invalid(field+".requests", "burst %q: %d is not in [1, %d]", b.Label, b.Requests, MaxBurstRequests)
		case b.Path != "" && !strings.HasPrefix(b.Path, "/"):
			return invalid(field+".path", "burst %q: %q does not begin with /", b.Label, b.Path)
		}
		labels[b.Label] = true
		bp, err := newBurstPlan(b, p.cfg.Targets[ti], p.classifiers[ti], p.timeout, nil)
		if err != nil {
			return invalid(field+".target", "burst %q: %v", b.Label, err)
		}
		p.bursts = append(p.bursts, bp)
	}
	for label, w := range p.cfg.BurstRaw {
		if !labels[label] || w == nil {
			return invalid("burst raw", "%q is not a burst label or has a nil writer", label)
		}
	}
	return nil
}

// newBurstPlan prepares burst b of target t. tlsBase, if set, is the TLS
// configuration of https targets (tests give their roots); nil means the
// defaults, as the scheduled requests' transport has them.
func newBurstPlan(b Burst, t Target, cl *Classifier, timeout time.Duration, tlsBase *tls.Config) (*burstPlan, error) {
	bp := &burstPlan{b: b, cl: cl, timeout: timeout}
	urls := t.URLs
	if len(urls) == 0 {
		urls = []string{t.URL}
	}
	if b.Method != "" {
		t.Method, t.Body = b.Method, nil
	}
	for _, u := range urls {
		if b.Path != "" {
			pu, err := url.Parse(u)
			if err != nil {
				return nil, err
			}
			ref, err := url.Parse(b.Path)
			if err != nil {
				return nil, err
			}
			pu.Path, pu.RawPath, pu.RawQuery = ref.Path, ref.RawPath, ref.RawQuery
			u = pu.String()
		}
		r, err := newBurstReq(t, u, tlsBase)
		if err != nil {
			return nil, err
		}
		bp.reqs = append(bp.reqs, r)
	}
	return bp, nil
}

// newBurstReq serializes t's request to rawURL as vegeta would build it,
// with "Connection: close".
func newBurstReq(t Target, rawURL string, tlsBase *tls.Config) (burstReq, error) {
	method := t.Method
	if method == "" {
		method = http.MethodGet
	}
	tgt := vegeta.Target{Method: method, URL: rawURL, Header: t.Header, Body: t.Body}
	req, err := tgt.Request()
	if err != nil {
		return burstReq{}, err
	}
	req.Close = true
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		return burstReq{}, err
	}
	port := req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	r := burstReq{addr: net.JoinHostPort(req.URL.Hostname(), port), wire: buf.Bytes(), method: method, url: rawURL}
	if req.URL.Scheme == "https" {
		r.tls = &tls.Config{}
		if tlsBase != nil {
			r.tls = tlsBase.Clone()
		}
		if r.tls.ServerName == "" {
			r.tls.ServerName = req.URL.Hostname()
		}
	}
	return r, nil
}
