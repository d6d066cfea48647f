package loadgen

import (
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// sample is one classified result, reduced to what the aggregator needs.
// Offsets are nanoseconds from the attack start t0.
type sample struct {
	intended int64 // intended send offset: schedule.at(Seq)
	actual   int64 // actual send offset: Result.Timestamp - t0
	latency  int64 // Result.Latency
	ep       int32 // endpoint index
	code     uint16
	class    Class
	harness  bool
	// cancelled is set when the client gave up on the request on purpose
	// (Phase.Cancel); class is then client_timeout.
	cancelled bool
	// retry, when any count is set, makes this an attempt record of a
	// retrying client rather than a result: it counts for the request's
	// window and phase (by intended) and nothing else.
	retry rundata.RetryCounts
	// seq, bytesIn, bytesOut and errText are the rest of the vegeta
	// result, kept for a shard's batches (the raw results of a merged
	// load); the aggregator does not read them.
	seq               uint64
	bytesIn, bytesOut uint64
	errText           string
	// timing are the metrics of the response's Server-Timing headers when
	// it carried any (stSeen); stBad and stDropped count the entries
	// ParseServerTiming found malformed and left out.
	timing           []TimingEntry
	stSeen           bool
	stBad, stDropped uint32
}

// done is when s completed, as an offset from t0 (an attempt record: 0).
func (s *sample) done() int64 {
	if s.isAttempt() {
		return 0
	}
	return s.actual + s.latency
}

// isAttempt reports whether s is an attempt record.
func (s *sample) isAttempt() bool { return s.retry != (rundata.RetryCounts{}) }

// phaseSpan is a phase as offsets from t0.
type phaseSpan struct {
	name       string
	start, end int64
}

// aggConfig configures an aggregator. All durations are nanoseconds.
type aggConfig struct {
	t0           time.Time
	window       int64
	duration     int64
	lagThreshold int64
	phases       []phaseSpan
	endpoints    []string
	schedules    []counts
	maxOpen      int // open windows per endpoint before the oldest is force-closed
	onWindow     func(Window)
	onResult     func(ResultEvent)
	hdrLogs      []*hdrhistogram.HistogramLogWriter // per endpoint; nil entries allowed
}

// winHists is the histogram set of one open window.
type winHists struct{ lat, ok, intended, lag *hist }

func newWinHists() *winHists {
	return &winHists{lat: newHist(), ok: newHist(), intended: newHist(), lag: newHist()}
}

func (h *winHists) reset() {
	h.lat.reset()
	h.ok.reset()
	h.intended.reset()
	h.lag.reset()
}

// openWindow accumulates one endpoint's window until all of its scheduled
// requests have come back.
type openWindow struct {
	idx                int64
	counts             Counts
	sent               int64 // sends whose actual time falls in the window
	received, expected int64 // results by intended time; expected per schedule
	harness            int64
	cancelled          int64
	retry              rundata.RetryCounts
	h                  *winHists
}

// phaseAgg accumulates one endpoint × phase.
type phaseAgg struct {
	counts    Counts
	sent      int64 // sends whose actual time falls in the phase
	harness   int64
	cancelled int64
	overran   Counts // results answered after the phase ended
	retry     rundata.RetryCounts
	h         *winHists
	byClass   [NumClasses]*hist
	other     map[uint16]int64 // status codes of results no rule classified
	timing    timingAgg
}

// epAgg is the per-endpoint state.
type epAgg struct {
	name     string
	sched    counts
	base     int64 // index of open[0]; all windows below it are closed
	open     []*openWindow
	phases   []*phaseAgg
	counts   Counts
	received int64
	late     int64 // results for windows already force-closed
	last     Window
}

// aggregator turns samples into windows and per-phase statistics. It is
// driven by one goroutine and is not safe for concurrent use. Memory is
// O(windows + phases): histograms are per open window (recycled) and per
// endpoint × phase.
type aggregator struct {
	cfg     aggConfig
	nWin    int64
	eps     []*epAgg
	free    []*winHists
	windows []Window
	err     error // first HdrHistogram log write error
}

func newAggregator(cfg aggConfig) *aggregator {
	a := &aggregator{cfg: cfg, nWin: (cfg.duration + cfg.window - 1) / cfg.window}
	for i, name := range cfg.endpoints {
		e := &epAgg{name: name, sched: cfg.schedules[i]}
		for range cfg.phases {
			e.phases = append(e.phases, &phaseAgg{h: newWinHists()})
		}
		a.eps = append(a.eps, e)
	}
	return a
}

// phaseIndex returns the phase containing offset d, or -1.
func (a *aggregator) phaseIndex(d int64) int { return phaseIndexOf(a.cfg.phases, d) }

// phaseIndexOf returns the phase of ps containing offset d, or -1.
func phaseIndexOf(ps []phaseSpan, d int64) int {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].end > d })
	if i == len(ps) || d < ps[i].start {
		return -1
	}
	return i
}

// add records one sample. It allocates only when a window opens and the
// free list is empty.
func (a *aggregator) add(s sample) {
	e := a.eps[s.ep]
	if s.isAttempt() {
		a.addAttempt(e, s)
		return
	}
	if a.cfg.onResult != nil {
		a.cfg.onResult(a.resultEvent(e, s))
	}
	lag := max(0, s.actual-s.intended)
	e.counts[s.class]++
	e.received++
	if pi := a.phaseIndex(s.intended); pi >= 0 {
		p := e.phases[pi]
		p.counts[s.class]++
		if s.harness {
			p.harness++
		}
		if s.cancelled {
			p.cancelled++
		} else if s.actual+s.latency > a.cfg.phases[pi].end {
			p.overran[s.class]++
		}
		if s.class == ClassOther {
			if p.other == nil {
				p.other = map[uint16]int64{}
			}
			p.other[s.code]++
		}
		recordInto(p.h, s, lag)
		p.timing.add(&s)
		if p.byClass[s.class] == nil {
			p.byClass[s.class] = newHist()
		}
		p.byClass[s.class].record(s.latency)
	}
	if pi := a.phaseIndex(s.actual); pi >= 0 {
		e.phases[pi].sent++
	}
	if k := s.intended / a.cfg.window; k < e.base {
		e.late++
	} else if w := a.window(e, k); w != nil {
		w.counts[s.class]++
		w.received++
		if s.harness {
			w.harness++
		}
		if s.cancelled {
			w.cancelled++
		}
		recordInto(w.h, s, lag)
	}
	if j := s.actual / a.cfg.window; j >= e.base && j < a.nWin {
		if w := a.window(e, j); w != nil {
			w.sent++
		}
	}
	for len(e.open) > 0 && e.open[0].received >= e.open[0].expected {
		a.closeHead(e)
	}
}

// ResultEvent is one recorded result of a target, as Config.OnResult gets
// it.
type ResultEvent struct {
	// Endpoint is the target's name.
	Endpoint string
	// Class is the result's class by the target's rules; OK is Class ==
	// ClassOK, the one class of success (every other class is a failure,
	// as Counts.Failed counts them).
	Class Class
	OK    bool
	// Latency is from the actual send to the answer (or the error); for a
	// retrying client, to its last attempt's answer.
	Latency time.Duration
	// Sent is when the request was actually sent; Done when it completed,
	// Sent + Latency.
	Sent, Done time.Time
	// Harness is set for an error of the load generator's own side
	// (IsHarnessError); Cancelled for a request the client gave up on on
	// purpose (Phase.Cancel), whose Class is client_timeout.
	Harness, Cancelled bool
}

// resultEvent describes s, a result of e, for Config.OnResult.
func (a *aggregator) resultEvent(e *epAgg, s sample) ResultEvent {
	sent := a.cfg.t0.Add(time.Duration(s.actual))
	return ResultEvent{Endpoint: e.name, Class: s.class, OK: s.class == ClassOK, Latency: time.Duration(s.latency),
		Sent: sent, Done: sent.Add(time.Duration(s.latency)), Harness: s.harness, Cancelled: s.cancelled}
}

// addAttempt counts a retrying client's attempt record for its request's
// window and phase. A record of a window already closed (force-closed, or
// with no request seq) counts for the phase only.
func (a *aggregator) addAttempt(e *epAgg, s sample) {
	if s.intended < 0 {
		return
	}
	if pi := a.phaseIndex(s.intended); pi >= 0 {
		e.phases[pi].retry.Add(s.retry)
	}
	if k := s.intended / a.cfg.window; k >= e.base {
		if w := a.window(e, k); w != nil {
			w.retry.Add(s.retry)
		}
	}
}

func recordInto(h *winHists, s sample, lag int64) {
	h.lat.record(s.latency)
	if s.class == ClassOK {
		h.ok.record(s.latency)
	}
	h.intended.record(s.latency + lag)
	h.lag.record(lag)
}

// window returns open window k of e, opening windows up to k and
// force-closing the oldest when more than maxOpen would be open. It returns
// nil for k beyond the run.
func (a *aggregator) window(e *epAgg, k int64) *openWindow {
	if k >= a.nWin {
		return nil
	}
	if k < e.base {
		return nil
	}
	for k-e.base >= int64(a.cfg.maxOpen) {
		if len(e.open) == 0 {
			e.open = append(e.open, a.newOpen(e, e.base))
		}
		a.closeHead(e)
	}
	for next := e.base + int64(len(e.open)); next <= k; next++ {
		e.open = append(e.open, a.newOpen(e, next))
	}
	return e.open[k-e.base]
}

func (a *aggregator) newOpen(e *epAgg, k int64) *openWindow {
	start := k * a.cfg.window
	end := min(start+a.cfg.window, a.cfg.duration)
	return &openWindow{idx: k, expected: e.sched.countIn(start, end), h: a.hists()}
}

func (a *aggregator) hists() *winHists {
	if n := len(a.free); n > 0 {
		h := a.free[n-1]
		a.free = a.free[:n-1]
		return h
	}
	return newWinHists()
}

// closeHead closes e's oldest open window into a Window.
func (a *aggregator) closeHead(e *epAgg) {
	w := e.open[0]
	copy(e.open, e.open[1:])
	e.open[len(e.open)-1] = nil
	e.open = e.open[:len(e.open)-1]
	e.base = w.idx + 1

	start := w.idx * a.cfg.window
	dur := min(a.cfg.window, a.cfg.duration-start)
	win := Window{
		Endpoint:        e.name,
		Index:           int(w.idx),
		Start:           a.cfg.t0.Add(time.Duration(start)),
		Offset:          time.Duration(start),
		Duration:        time.Duration(dur),
		Counts:          w.counts,
		TargetRate:      e.sched.rateAt(start),
		Rate:            float64(w.sent) / time.Duration(dur).Seconds(),
		Latency:         w.h.lat.quantiles(),
		LatencyOK:       w.h.ok.quantiles(),
		LatencyIntended: w.h.intended.quantiles(),
		Sent:            w.sent,
		Expected:        w.expected,
		HarnessErrors:   w.harness,
		Cancelled:       w.cancelled,
		RetryCounts:     w.retry,
		Partial:         w.received < w.expected,
	}
	if pi := a.phaseIndex(start); pi >= 0 {
		win.Phase = a.cfg.phases[pi].name
	}
	lag := w.h.lag.quantiles()
	win.LagP99, win.LagMax = lag.P99, lag.Max
	win.Diverged = diverged(win.Latency, win.LatencyIntended, time.Duration(a.cfg.lagThreshold))
	a.writeHdrLog(int(indexOf(a.eps, e)), w, start, dur)
	w.h.reset()
	a.free = append(a.free, w.h)
	e.last = win
	a.windows = append(a.windows, win)
	if a.cfg.onWindow != nil {
		a.cfg.onWindow(win)
	}
}

// diverged reports whether latency from the intended send time exceeds
// latency from the actual send at p99 by more than max(threshold, 10 %):
// the window's vegeta-style numbers then hide coordinated omission.
func diverged(actual, intended Quantiles, threshold time.Duration) bool {
	return intended.P99-actual.P99 > max(threshold, actual.P99/10)
}

func indexOf(eps []*epAgg, e *epAgg) int {
	for i, x := range eps {
		if x == e {
			return i
		}
	}
	return -1
}

// writeHdrLog writes the window's latency histograms to the endpoint's
// HdrHistogram interval log: untagged is latency from the actual send,
// Tag=intended is latency from the intended send time. Values are ns.
func (a *aggregator) writeHdrLog(ep int, w *openWindow, start, dur int64) {
	if ep < 0 || ep >= len(a.cfg.hdrLogs) || a.cfg.hdrLogs[ep] == nil || a.err != nil {
		return
	}
	lw := a.cfg.hdrLogs[ep]
	t0ms := a.cfg.t0.UnixMilli()
	for _, h := range []struct {
		tag string
		h   *hist
	}{{"", w.h.lat}, {"intended", w.h.intended}} {
		h.h.h.SetTag(h.tag)
		h.h.h.SetStartTimeMs(t0ms + start/1e6)
		h.h.h.SetEndTimeMs(t0ms + (start+dur)/1e6)
		if err := lw.OutputIntervalHistogram(h.h.h); err != nil {
			a.err = err
			return
		}
	}
}

// flush closes every open window that starts before stop (an offset from
// t0), complete or not. Called once, after the last sample.
func (a *aggregator) flush(stop int64) {
	last := min(a.nWin, (stop+a.cfg.window-1)/a.cfg.window)
	for _, e := range a.eps {
		a.window(e, last-1) // open the trailing windows nobody touched
		for len(e.open) > 0 && e.open[0].idx < last {
			a.closeHead(e)
		}
		for _, w := range e.open {
			w.h.reset()
			a.free = append(a.free, w.h)
		}
		e.open = nil
	}
	sort.SliceStable(a.windows, func(i, j int) bool { return a.windows[i].Index < a.windows[j].Index })
}
