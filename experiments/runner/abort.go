package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// Stop conditions (plan.Run.Abort), as AWS FIS's: while the fault phase's
// faults are in place, an abortWatcher judges each rule; the first one met
// removes every fault at once (faultSwitcher.abortAll), and none is set
// again in the run. The load goes on, so the recovery is still measured.
const (
	// minAbortResults is the fewest results over a rule's window that let
	// an error-rate or p99 rule be judged.
	minAbortResults = 5
	// abortTick is how often every rule is judged besides on each result:
	// a window whose results stopped coming (or that only now covers the
	// rule's For) is judged within it.
	abortTick = 25 * time.Millisecond
	// defaultProbeInterval is a probe rule's interval when it has none.
	defaultProbeInterval = 100 * time.Millisecond
	// probeBodyLimit is how much of a probe's answer is read (to reuse the
	// connection).
	probeBodyLimit = 64 << 10
)

// checkAbort checks a plan's stop conditions and OnAbort before anything
// runs.
func checkAbort(p *plan.Plan) error {
	switch p.OnAbort {
	case "", rundata.OnAbortContinue, rundata.OnAbortStop:
	default:
		return fmt.Errorf("plan: on abort %q: want %q or %q", p.OnAbort, rundata.OnAbortContinue, rundata.OnAbortStop)
	}
	for _, run := range p.Runs {
		for i, r := range run.Abort {
			if err := checkAbortRule(r, endpointNames(run.Load)); err != nil {
				return fmt.Errorf("plan: run %s: abort[%d]: %w", run.ID, i, err)
			}
		}
	}
	return nil
}

// checkAbortRule checks one rule against the run's endpoint names.
func checkAbortRule(r rundata.AbortRule, endpoints []string) error {
	set := 0
	for _, b := range []bool{r.ErrorRate != 0, r.P99 != 0, r.Probe != ""} {
		if b {
			set++
		}
	}
	switch {
	case set != 1:
		return errors.New("set exactly one of error_rate, p99 and probe")
	case r.For < 0:
		return fmt.Errorf("for %v is negative", r.For)
	case r.Probe != "":
		if u, err := url.Parse(r.Probe); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("probe %q is not an http(s) URL", r.Probe)
		}
		if r.ProbeInterval < 0 {
			return fmt.Errorf("probe interval %v is negative", r.ProbeInterval)
		}
		return nil
	case r.ErrorRate != 0 && !(r.ErrorRate > 0 && r.ErrorRate <= 1):
		return fmt.Errorf("error rate %v is not in (0, 1]", r.ErrorRate)
	case r.P99 < 0:
		return fmt.Errorf("p99 %v is negative", r.P99)
	case r.For == 0:
		return errors.New("for must be positive: it is the window the results are judged over")
	case !allEndpoints(r.Endpoint) && !slices.Contains(endpoints, r.Endpoint):
		return fmt.Errorf("endpoint %q is not loaded in the run (endpoints: %v, or \"*\")", r.Endpoint, endpoints)
	}
	return nil
}

// allEndpoints reports whether a rule's Endpoint means each endpoint.
func allEndpoints(ep string) bool { return ep == "*" || ep == "" }

// ruleText is a rule as a sentence, e.g. "/a error rate ≥ 0.5 for 500ms".
func ruleText(r rundata.AbortRule) string {
	who := "/" + r.Endpoint + "'s"
	if allEndpoints(r.Endpoint) {
		who = "any endpoint's"
	}
	switch {
	case r.Probe != "":
		return fmt.Sprintf("probe %s answers no 2xx for %v (asked every %v)", r.Probe, r.For, probeInterval(r))
	case r.P99 != 0:
		return fmt.Sprintf("%s p99 ≥ %v for %v", who, r.P99, r.For)
	default:
		return fmt.Sprintf("%s error rate ≥ %g for %v", who, r.ErrorRate, r.For)
	}
}

func probeInterval(r rundata.AbortRule) time.Duration {
	if r.ProbeInterval > 0 {
		return r.ProbeInterval
	}
	return defaultProbeInterval
}

// abortWatcher judges a run's stop conditions while the fault phase's
// faults are in place (armed by the faultSwitcher): the error-rate and p99
// rules on every result (onResult, on the load generator's aggregator
// goroutine) and every abortTick, the probe rules on goroutines of their
// own. The first rule met is handed to its loop goroutine, which removes
// the faults. Times are offsets from base (monotonic).
type abortWatcher struct {
	rules  []rundata.AbortRule
	sw     *faultSwitcher
	base   time.Time
	client *http.Client // the probes'; nil without a probe rule

	// armed is a lock-free hint for onResult; it changes under mu.
	armed atomic.Bool

	mu          sync.Mutex
	since       int64 // when the faults were in place
	wins        []*abortWindow
	byEndpoint  map[string][]*abortWindow
	found       *abortFound // the first rule met; nil before
	executed    bool        // found was acted on
	stopped     bool
	probeCancel context.CancelFunc
	result      *rundata.Abort

	fire chan struct{} // found is set
	quit chan struct{}
	wg   sync.WaitGroup
}

// abortFound is a rule found met: its sentence, what was seen, and when.
type abortFound struct {
	rule, trigger string
	endpoint      string // whose results met it; "" for a probe
	at            time.Time
}

// newAbortWatcher returns a watcher of rules over the run's endpoints
// (those "*" means), which aborts through sw, or nil without rules.
func newAbortWatcher(rules []rundata.AbortRule, endpoints []string, sw *faultSwitcher) *abortWatcher {
	if len(rules) == 0 {
		return nil
	}
	w := &abortWatcher{rules: rules, sw: sw, base: time.Now(), byEndpoint: map[string][]*abortWindow{},
		fire: make(chan struct{}, 1), quit: make(chan struct{})}
	for i, r := range rules {
		if r.Probe != "" {
			if w.client == nil {
				// Its own client: no proxy from the environment, no
				// connection shared with the load.
				w.client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2}}
			}
			continue
		}
		eps := []string{r.Endpoint}
		if allEndpoints(r.Endpoint) {
			eps = endpoints
		}
		for _, ep := range eps {
			win := &abortWindow{rule: i, endpoint: ep, r: r}
			w.wins = append(w.wins, win)
			w.byEndpoint[ep] = append(w.byEndpoint[ep], win)
		}
	}
	return w
}

// start starts the loop goroutine; stop ends it.
func (w *abortWatcher) start() {
	if w == nil {
		return
	}
	w.wg.Add(1)
	go w.loop()
}

// now is the offset of the present.
func (w *abortWatcher) now() int64 { return int64(time.Since(w.base)) }

// arm starts judging the rules: the faults are in place since at. Only
// the first arm of a run counts, and none after a rule was met.
func (w *abortWatcher) arm(at time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found != nil || w.stopped || w.armed.Load() {
		return
	}
	w.since = int64(at.Sub(w.base))
	for _, win := range w.wins {
		win.reset()
	}
	w.armed.Store(true)
	var ctx context.Context
	for i, r := range w.rules {
		if r.Probe == "" {
			continue
		}
		if ctx == nil {
			ctx, w.probeCancel = context.WithCancel(context.Background())
		}
		w.wg.Add(1)
		go w.probe(ctx, i)
	}
}

// disarm stops judging the rules: the faults are (being) removed.
func (w *abortWatcher) disarm() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.armed.Store(false)
	cancel := w.probeCancel
	w.probeCancel = nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// onResult takes one of the load's results (loadgen.Config.OnResult) and
// judges the rules of its endpoint. A request the client gave up on on
// purpose, or one the load generator itself failed, says nothing of the
// system and is left out.
func (w *abortWatcher) onResult(ev loadgen.ResultEvent) {
	if !w.armed.Load() || ev.Cancelled || ev.Harness {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wins := w.byEndpoint[ev.Endpoint]
	if !w.armed.Load() || w.found != nil || len(wins) == 0 {
		return
	}
	done := int64(ev.Done.Sub(w.base))
	if done < w.since {
		return // it completed before the faults were in place
	}
	s := abortSample{done: done, latency: ev.Latency, ok: ev.OK}
	for _, win := range wins {
		win.push(s)
	}
	w.judgeLocked(wins, w.now())
}

// judgeLocked judges the windows at now, acting on the first met.
func (w *abortWatcher) judgeLocked(wins []*abortWindow, now int64) {
	if !w.armed.Load() || w.found != nil {
		return
	}
	for _, win := range wins {
		if now-w.since < int64(win.r.For) {
			continue // the faults have not been in place for the window yet
		}
		win.evict(now - int64(win.r.For))
		if win.met() {
			w.foundLocked(win.rule, win.endpoint, win.trigger(), now)
			return
		}
	}
}

// foundLocked records that rule i was met at now and wakes the loop.
func (w *abortWatcher) foundLocked(i int, endpoint, trigger string, now int64) {
	if w.found != nil {
		return
	}
	w.found = &abortFound{rule: ruleText(w.rules[i]), endpoint: endpoint, trigger: trigger, at: w.base.Add(time.Duration(now)).UTC()}
	select {
	case w.fire <- struct{}{}:
	default:
	}
}

// loop judges every window each abortTick and acts on a rule met.
func (w *abortWatcher) loop() {
	defer w.wg.Done()
	t := time.NewTicker(abortTick)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			w.execute() // a rule met just before the load ended
			return
		case <-t.C:
			w.mu.Lock()
			w.judgeLocked(w.wins, w.now())
			w.mu.Unlock()
		case <-w.fire:
		}
		w.execute()
	}
}

// execute removes the faults for the rule found met, once.
func (w *abortWatcher) execute() {
	w.mu.Lock()
	f := w.found
	if f == nil || w.executed {
		w.mu.Unlock()
		return
	}
	w.executed = true
	w.mu.Unlock()
	cleared := w.sw.abortAll(f.trigger)
	w.mu.Lock()
	w.result = &rundata.Abort{Rule: f.rule, Endpoint: f.endpoint, Trigger: f.trigger, At: f.at, Cleared: cleared}
	w.mu.Unlock()
}

// stop ends the watcher and its probes, acting on a rule met just before,
// and returns the abort of the run (nil when no rule was met).
func (w *abortWatcher) stop() *rundata.Abort {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	close(w.quit)
	w.disarm()
	w.wg.Wait()
	if w.client != nil {
		w.client.CloseIdleConnections()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.result
}

// probe asks rule i's URL every interval (one request at a time, each
// timed out at For, at least the interval: a probe that does not answer
// within For is For without a 2xx) until ctx ends; the rule is met when no
// 2xx came for For since the first failed probe.
func (w *abortWatcher) probe(ctx context.Context, i int) {
	defer w.wg.Done()
	r := w.rules[i]
	every := probeInterval(r)
	t := time.NewTicker(every)
	defer t.Stop()
	var firstFail time.Time
	failed := 0
	for {
		sent := time.Now()
		ok, what := w.ask(ctx, r.Probe, max(every, r.For))
		if ctx.Err() != nil {
			return
		}
		if ok {
			failed = 0
		} else {
			if failed == 0 {
				firstFail = sent
			}
			failed++
			if d := time.Since(firstFail); d >= r.For {
				trigger := fmt.Sprintf("probe %s answered no 2xx for %v (%d probes, the last: %s)",
					r.Probe, d.Round(time.Millisecond), failed, what)
				w.mu.Lock()
				if w.armed.Load() {
					w.foundLocked(i, "", trigger, w.now())
				}
				w.mu.Unlock()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ask GETs u once within timeout: whether it answered 2xx, and if not,
// what it answered.
func (w *abortWatcher) ask(ctx context.Context, u string, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := w.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return false, fmt.Sprintf("no answer within %v", timeout)
		}
		return false, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, probeBodyLimit))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return true, ""
	}
	return false, resp.Status
}

// abortWindow is an error-rate or p99 rule's sliding window over one
// endpoint's results: those completed in the last For, oldest first
// (results come about in completion order).
type abortWindow struct {
	rule     int
	endpoint string
	r        rundata.AbortRule
	buf      []abortSample
	head     int // buf[head:] are in the window
	bad      int // of them, failures (error rate) or at or above P99 (p99)
}

// abortSample is one result: when it completed (an offset), its latency
// and whether it succeeded.
type abortSample struct {
	done    int64
	latency time.Duration
	ok      bool
}

func (a *abortWindow) isBad(s abortSample) bool {
	if a.r.P99 > 0 {
		return s.latency >= a.r.P99
	}
	return !s.ok
}

func (a *abortWindow) reset() { a.buf, a.head, a.bad = a.buf[:0], 0, 0 }

func (a *abortWindow) push(s abortSample) {
	a.buf = append(a.buf, s)
	if a.isBad(s) {
		a.bad++
	}
}

// evict drops the results completed before from; the buffer is compacted
// once half of it is dropped (amortised O(1) per result).
func (a *abortWindow) evict(from int64) {
	for a.head < len(a.buf) && a.buf[a.head].done < from {
		if a.isBad(a.buf[a.head]) {
			a.bad--
		}
		a.head++
	}
	if a.head > 0 && 2*a.head >= len(a.buf) {
		n := copy(a.buf, a.buf[a.head:])
		a.buf, a.head = a.buf[:n], 0
	}
}

func (a *abortWindow) count() int { return len(a.buf) - a.head }

// p99Rank is the 1-based rank of the p99 among n sorted values, as the
// HdrHistogram quantiles of the records take it.
func p99Rank(n int) int { return max(1, int(0.99*float64(n)+0.5)) }

// met reports whether the rule holds over the window: at least
// minAbortResults results, and an error rate of at least ErrorRate, or a
// p99 of at least P99 (as many results at or above P99 as rank above the
// p99).
func (a *abortWindow) met() bool {
	n := a.count()
	if n < minAbortResults {
		return false
	}
	if a.r.P99 > 0 {
		return a.bad >= n-p99Rank(n)+1
	}
	return float64(a.bad)/float64(n) >= a.r.ErrorRate
}

// trigger describes what the window shows.
func (a *abortWindow) trigger() string {
	n := a.count()
	if a.r.P99 > 0 {
		lat := make([]time.Duration, 0, n)
		for _, s := range a.buf[a.head:] {
			lat = append(lat, s.latency)
		}
		slices.Sort(lat)
		return fmt.Sprintf("/%s p99 %v over the last %v (%d results, %d at or above %v)",
			a.endpoint, lat[p99Rank(n)-1].Round(time.Microsecond), a.r.For, n, a.bad, a.r.P99)
	}
	return fmt.Sprintf("/%s error rate %.2f over the last %v (%d of %d)", a.endpoint, float64(a.bad)/float64(n), a.r.For, a.bad, n)
}
