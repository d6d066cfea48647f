package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// burstResult is what became of one request of a burst. Times are zero
// when the request did not get that far.
type burstResult struct {
	ready             time.Time // the connection was open (or its dial had failed)
	wrote             time.Time // the write began
	done              time.Time // the response was read whole, or the request failed
	code              uint16
	header            http.Header
	err               string // as vegeta's Result.Error: the failure, or the status line of a code outside [200, 400)
	dialErr, writeErr bool
	// aborted is set when the run was stopped first: the result is not one.
	aborted bool
}

// burstSet runs a plan's bursts, each on a goroutine of its own, from
// start to its last answer or the end of ctx.
type burstSet struct {
	wg    sync.WaitGroup
	stats []rundata.BurstStats
	errs  []error
}

// startBursts starts every burst of p (none on a shard other than the
// first); wait returns their records.
func startBursts(ctx context.Context, p *plan, t0 time.Time) *burstSet {
	bursts := p.bursts
	if !p.cfg.Shard.firesBursts() {
		bursts = nil
	}
	s := &burstSet{stats: make([]rundata.BurstStats, len(bursts)), errs: make([]error, len(bursts))}
	for i, bp := range bursts {
		s.wg.Go(func() {
			at := t0.Add(bp.b.At)
			rs, released := bp.fire(ctx, at.Add(-BurstDialLead), at)
			s.stats[i] = bp.stats(t0, at, released, rs)
			if w := p.cfg.BurstRaw[bp.b.Label]; w != nil {
				s.errs[i] = bp.writeRaw(w, released, rs)
			}
		})
	}
	return s
}

// wait waits for every burst and returns their records, in Config.Bursts
// order, and the raw output's write errors.
func (s *burstSet) wait() ([]rundata.BurstStats, error) {
	s.wg.Wait()
	return s.stats, errors.Join(s.errs...)
}

// fire opens the burst's connections from dialAt (at once if it is past),
// releases every request at at and returns when every connection is
// closed, with one result per request and the instant of the release (zero
// if ctx ended first). When ctx ends, connections are closed and the
// results not yet in are marked aborted.
func (bp *burstPlan) fire(ctx context.Context, dialAt, at time.Time) ([]burstResult, time.Time) {
	rs := make([]burstResult, bp.b.Requests)
	if !sleepUntil(ctx, dialAt) {
		for i := range rs {
			rs[i].aborted = true
		}
		return rs, time.Time{}
	}
	release := make(chan struct{})
	sem := make(chan struct{}, burstDialers)
	var wg sync.WaitGroup
	for i := range rs {
		req := &bp.reqs[i%len(bp.reqs)]
		wg.Go(func() { rs[i] = bp.request(ctx, req, at, sem, release) })
	}
	var released time.Time
	if sleepUntil(ctx, at) {
		released = time.Now()
		close(release)
	}
	wg.Wait()
	return rs, released
}

// sleepUntil waits until t and reports whether ctx was still live then.
func sleepUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// request is one request of a burst: dial, wait for the release, write,
// read the whole response.
func (bp *burstPlan) request(ctx context.Context, req *burstReq, at time.Time, sem chan struct{}, release <-chan struct{}) burstResult {
	conn, dialErr := bp.dial(ctx, req, at, sem)
	r := burstResult{ready: time.Now()}
	var br *bufio.Reader
	if conn != nil {
		defer conn.Close()
		defer context.AfterFunc(ctx, func() { conn.Close() })()
		br = bufio.NewReader(conn)
		// Nothing but the write stands between the release and the wire:
		// the deadline moves to the write's after it.
		_ = conn.SetDeadline(at.Add(bp.timeout))
	}
	select {
	case <-release:
	case <-ctx.Done():
		r.aborted = true
		return r
	}
	if dialErr != nil {
		r.dialErr = true
		return bp.failed(ctx, r, req, dialErr)
	}
	return bp.exchange(ctx, r, req, conn, br)
}

// exchange writes req on conn and reads its whole response through br.
func (bp *burstPlan) exchange(ctx context.Context, r burstResult, req *burstReq, conn net.Conn, br *bufio.Reader) burstResult {
	r.wrote = time.Now()
	if _, err := conn.Write(req.wire); err != nil {
		r.writeErr = true
		return bp.failed(ctx, r, req, err)
	}
	_ = conn.SetDeadline(r.wrote.Add(bp.timeout))
	resp, err := http.ReadResponse(br, &http.Request{Method: req.method})
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		return bp.failed(ctx, r, req, err)
	}
	r.done = time.Now()
	r.code, r.header = uint16(resp.StatusCode), resp.Header
	if r.code < 200 || r.code >= 400 {
		r.err = resp.Status
	}
	return r
}

// failed completes r with err, described as net/http describes a failed
// request, so that the rules classify it as they would a scheduled one: a
// deadline says "Client.Timeout". A failure because ctx ended is aborted.
func (bp *burstPlan) failed(ctx context.Context, r burstResult, req *burstReq, err error) burstResult {
	r.done = time.Now()
	r.err = fmt.Sprintf("%s %q: %v", req.method, req.url, err)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		r.err += " (Client.Timeout exceeded while awaiting response)"
	}
	r.aborted = ctx.Err() != nil
	return r
}

// dial opens one connection of the burst (TLS handshake included), at most
// burstDialers at a time, by a client timeout after the burst's instant at.
func (bp *burstPlan) dial(ctx context.Context, req *burstReq, at time.Time, sem chan struct{}) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, at.Add(bp.timeout))
	defer cancel()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-sem }()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", req.addr)
	if err != nil || req.tls == nil {
		return conn, err
	}
	tc := tls.Client(conn, req.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// stats is the record of the burst released at released (intended at) from
// its results.
func (bp *burstPlan) stats(t0, at, released time.Time, rs []burstResult) rundata.BurstStats {
	s := rundata.BurstStats{Label: bp.b.Label, Target: bp.b.Target, At: at, Offset: at.Sub(t0), Requests: bp.b.Requests}
	if !released.IsZero() {
		s.Release = released.Sub(at)
	}
	lat := newHist()
	var byClass [NumClasses]*hist
	for _, r := range rs {
		if r.aborted {
			s.Abandoned = true
			continue
		}
		c := bp.cl.Classify(r.code, r.header, r.err)
		s.Counts[c]++
		s.HarnessErrors += int64(b2i(IsHarnessError(r.code, r.err)))
		s.DialErrors += int64(b2i(r.dialErr))
		s.WriteErrors += int64(b2i(r.writeErr))
		s.LateDials += int64(b2i(!r.dialErr && r.ready.After(at)))
		if r.code != 0 {
			s.LastResponse = max(s.LastResponse, r.done.Sub(at))
		}
		if r.wrote.IsZero() {
			continue
		}
		w := r.wrote.Sub(at)
		if s.Written == 0 || w < s.FirstWrite {
			s.FirstWrite = w
		}
		s.LastWrite = max(s.LastWrite, w)
		s.Written++
		lat.record(int64(r.done.Sub(r.wrote)))
		if byClass[c] == nil {
			byClass[c] = newHist()
		}
		byClass[c].record(int64(r.done.Sub(r.wrote)))
	}
	s.Latency = lat.quantiles()
	for c, h := range byClass {
		if h != nil {
			if s.ByClass == nil {
				s.ByClass = map[string]Quantiles{}
			}
			s.ByClass[Class(c).String()] = h.quantiles()
		}
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeRaw writes the burst's results (not the aborted ones) to w in
// vegeta's encoding, in request order: Attack is the label, Seq the
// request's index, Timestamp its write (the release for one never written).
func (bp *burstPlan) writeRaw(w io.Writer, released time.Time, rs []burstResult) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := vegeta.NewEncoder(bw)
	for i, r := range rs {
		if r.aborted {
			continue
		}
		req := bp.reqs[i%len(bp.reqs)]
		res := vegeta.Result{Attack: bp.b.Label, Seq: uint64(i), Code: r.code, Timestamp: r.wrote,
			Error: r.err, Method: req.method, URL: req.url, Headers: r.header}
		if r.wrote.IsZero() {
			res.Timestamp = released
		} else {
			res.Latency = r.done.Sub(r.wrote)
		}
		if err := enc.Encode(&res); err != nil {
			return fmt.Errorf("loadgen: raw results of burst %q: %w", bp.b.Label, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("loadgen: raw results of burst %q: %w", bp.b.Label, err)
	}
	return nil
}
