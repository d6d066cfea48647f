package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// measure loads the stack through the phases, flips the condition's fault
// at the fault phase boundaries, samples metrics, and writes windows,
// phases, raw results and metrics into rundir. It fills meta's phases,
// faults and validity.
func (r *Runner) measure(ctx context.Context, rundir string, run plan.Run, st *Stack, meta *rundata.RunMeta) (*loadgen.Report, error) {
	files, err := openRunFiles(rundir, endpointNames(run.Load), burstLabels(run.Load), r.HdrLogs)
	if err != nil {
		return nil, err
	}
	defer files.close()

	sctx, stopSampler := context.WithCancel(ctx)
	targets := append([]SampleTarget(nil), st.Samples...)
	if m := run.ServiceMetrics; m != nil {
		// A user's service started by the runner is already a target (its
		// process); its metrics join it.
		i := slices.IndexFunc(targets, func(t SampleTarget) bool { return t.Component == rundata.ServiceComponent })
		if i < 0 {
			targets = append(targets, SampleTarget{Component: rundata.ServiceComponent})
			i = len(targets) - 1
		}
		targets[i].MetricsURL, targets[i].Map = m.URL, m.Map
	}
	targets = append(targets,
		SampleTarget{Component: rundata.LoadgenComponent, Gatherer: selfMetrics(), PID: os.Getpid()},
		SampleTarget{Component: rundata.MachineComponent, Machine: true})
	sampler := &Sampler{Targets: targets, Out: files.metrics, Interval: r.SampleInterval}
	if r.Progress != nil {
		sampler.OnSample = func(s []rundata.MetricSample) { r.Progress.Pools(run, s) }
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = sampler.Run(sctx) }()

	lctx, abort := context.WithCancel(ctx)
	defer abort()
	guard, stopGuard := r.startMemoryGuard(ctx, run, st, meta, abort)
	sw := &faultSwitcher{faults: run.Faults, probe: run.ProbeFaults, controls: st.Controls, client: st.ControlClient, replicas: st.Replicas, abort: abort}
	// "*" in a stop condition is each endpoint, the canary not among them.
	sw.watch = newAbortWatcher(run.Abort, endpointNames(plan.Load{Endpoints: run.Load.Endpoints}), sw)
	cfg, err := r.loadConfig(run, st, files, sw)
	if err != nil {
		stopGuard()
		stopSampler()
		wg.Wait()
		return nil, err
	}
	onPhase := cfg.OnPhase
	cfg.OnPhase = func(p loadgen.Phase, at time.Time) {
		guard.inPhase(p.Name)
		onPhase(p, at)
	}
	sw.watch.start()
	rep, runErr := loadgen.Run(lctx, cfg)
	stopGuard()
	if rec := guard.tripped(); rec != nil {
		meta.MemoryStop = rec
		if errors.Is(runErr, context.Canceled) && ctx.Err() == nil {
			runErr = nil // the guard stopped the load: what the service did, not an error
		}
	}
	meta.Abort = sw.watch.stop()
	if err := sw.failure(); err != nil && ctx.Err() == nil {
		runErr = err // it stopped the load early; the load's own error is only the cancel
	}
	if runErr == nil && meta.MemoryStop == nil && len(run.Faults) > 0 && (len(meta.Pools) > 0 || run.ServiceMetrics != nil) {
		settle(ctx, quietSpan(meta, orDefault(r.SampleInterval, DefaultSampleInterval)))
	}
	stopSampler()
	wg.Wait()
	sw.clear() // never leave a fault behind, even when interrupted

	meta.Faults = sw.events()
	if rep != nil {
		if pp, ok := r.Progress.(PhaseProgress); ok {
			pp.Phases(run, rep.Phases)
		}
		fillMeta(meta, rep)
		if err := writePhases(rundir, rep); err != nil && runErr == nil {
			runErr = err
		}
		if len(rep.Bursts) > 0 {
			if err := writeJSONAtomic(filepath.Join(rundir, rundata.BurstsFile), rep.Bursts); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	if err := files.close(); err != nil && runErr == nil {
		runErr = err
	}
	return rep, runErr
}

// selfMetrics is the registry of the runner's own process (the load
// generator): Go runtime statistics, scheduling latency and GC pauses.
var selfMetrics = sync.OnceValue(func() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), runtimestats.NewCollector())
	return reg
})

// loadConfig builds the load generator's configuration for one run.
func (r *Runner) loadConfig(run plan.Run, st *Stack, files *runFiles, sw *faultSwitcher) (loadgen.Config, error) {
	var targets []loadgen.Target
	eps := run.Load.Endpoints
	if c := run.Load.Canary; c != nil {
		eps = append(append([]plan.Endpoint(nil), eps...), *c)
	}
	for _, e := range eps {
		u, urls, err := resolveTargets(e, st.URLs)
		if err != nil {
			return loadgen.Config{}, fmt.Errorf("endpoint %s: %w", e.Name, err)
		}
		canary := run.Load.Canary != nil && e.Name == run.Load.Canary.Name
		targets = append(targets, loadgen.Target{Name: e.Name, Method: e.Method, Header: e.Header, Body: e.Body,
			URL: u, URLs: urls, Rate: e.Rate, Rules: e.Rules, Canary: canary, Retry: e.Retry})
	}
	enc := json.NewEncoder(files.windows)
	return loadgen.Config{
		Targets:   targets,
		Phases:    run.Load.Phases,
		Timeout:   run.Load.ClientTimeout,
		Window:    run.Load.Window,
		Raw:       files.raw,
		HdrLog:    files.hdr,
		BurstRaw:  files.burstRaw,
		Bursts:    run.Load.Bursts,
		Seed:      run.Load.Seed,
		InjectLag: run.Load.InjectLag,
		OnPhase:   sw.onPhase,
		OnWindow: func(w loadgen.Window) {
			_ = enc.Encode(w)
			if r.Progress != nil {
				r.Progress.Window(run, w)
			}
		},
		OnResult:            sw.onResult(),
		Progress:            r.progressFunc(run),
		ExcludeFromValidity: run.Load.ExcludeFromValidity,
		LagThreshold:        run.Load.MaxLagP99,
		CanaryMaxP99:        run.Load.CanaryMaxP99,
		Health:              run.Load.Health,
		Arrivals:            run.Load.Arrivals,
		Remote:              r.Remote,
	}, nil
}

// resolveTargets returns e's URL, or, for an endpoint of a fleet, the URL
// of each of its instances (loaded round-robin).
func resolveTargets(e plan.Endpoint, urls map[string]string) (string, []string, error) {
	if len(e.Targets) == 0 {
		u, err := e.Target.Resolve(urls)
		return u, nil, err
	}
	out := make([]string, len(e.Targets))
	for i, a := range e.Targets {
		u, err := a.Resolve(urls)
		if err != nil {
			return "", nil, err
		}
		out[i] = u
	}
	return "", out, nil
}

// endpointNames are the loaded endpoints, the canary last.
func endpointNames(l plan.Load) []string {
	var out []string
	for _, e := range l.Endpoints {
		out = append(out, e.Name)
	}
	if l.Canary != nil {
		out = append(out, l.Canary.Name)
	}
	return out
}

func (r *Runner) progressFunc(run plan.Run) func(loadgen.Snapshot) {
	if r.Progress == nil {
		return nil
	}
	return func(s loadgen.Snapshot) { r.Progress.Snapshot(run, s) }
}

// fillMeta copies the phase spans and validity verdicts of rep into meta.
func fillMeta(meta *rundata.RunMeta, rep *loadgen.Report) {
	meta.Shards = rep.Shards
	seen := map[string]bool{}
	for _, p := range rep.Phases {
		if !seen[p.Phase] {
			seen[p.Phase] = true
			meta.Phases = append(meta.Phases, rundata.PhaseSpan{Name: p.Phase, Start: p.Start, End: p.End})
		}
		if p.Excluded {
			continue
		}
		meta.Validity = append(meta.Validity, rundata.PhaseValidity{
			Endpoint: p.Endpoint, Phase: p.Phase, Valid: p.Valid, Broken: p.Broken,
			TargetRate: p.TargetRate, AchievedRate: p.AchievedRate, LagP99: p.LagP99,
			HarnessErrors: p.HarnessErrors,
		})
	}
}

// writePhases writes phases.json: the load generator's records of each
// endpoint and phase (rundata.PhaseStats).
func writePhases(rundir string, rep *loadgen.Report) error {
	return writeJSONAtomic(filepath.Join(rundir, rundata.PhasesFile), rep.Phases)
}

// faultSwitcher sets the run's faults when the fault phase starts and
// clears them when the next phase starts, through the proxies' control API,
// and records when each proxy acknowledged a switch. Its callbacks run on the
// load generator's phase goroutine; events and clear are called after
// loadgen.Run returned. While the fault phase's faults are in place, watch
// judges the run's stop conditions; one met removes every fault
// (abortAll), and no fault is set again in the run.
type faultSwitcher struct {
	faults   []plan.Faults
	probe    []plan.Faults        // set in the probe phases
	controls map[string]string    // component → control URL
	client   *http.Client         // reaches controls (the run's token); nil: a default one
	replicas map[string][]Control // component → its replicas, when several

	// abort, if set, stops the load when a switch fails.
	abort func()
	// watch, if set, judges the run's stop conditions.
	watch *abortWatcher

	// switching serialises the phase switches and an abort.
	switching sync.Mutex

	mu      sync.Mutex
	evs     []rundata.FaultEvent
	active  []activeFaults // fault sets in place
	err     error
	aborted bool // a stop condition removed the faults
}

// switchTimeout bounds one control call.
const switchTimeout = 5 * time.Second

func (f *faultSwitcher) onPhase(p loadgen.Phase, _ time.Time) {
	f.switching.Lock()
	defer f.switching.Unlock()
	f.watch.disarm()
	f.clearLocked()
	f.mu.Lock()
	aborted := f.aborted
	f.mu.Unlock()
	if aborted {
		return // a stop condition fired: no fault is set again in the run
	}
	switch p.Name {
	case rundata.PhaseFault:
		var last time.Time
		all := true
		for _, fs := range f.faults {
			at, ok := f.set(fs, false)
			last, all = at, all && ok
		}
		if all && len(f.faults) > 0 {
			f.watch.arm(last)
		}
	case rundata.PhaseProbeBefore, rundata.PhaseProbeAfter:
		for _, fs := range f.probe {
			f.set(fs, true)
		}
	}
}

// activeFaults is a fault set in place, and whether it is a probe's.
type activeFaults struct {
	plan.Faults
	probe bool
}

// replicasOf is the control plane of every replica of component.
func (f *faultSwitcher) replicasOf(component string) []Control {
	if rs, ok := f.replicas[component]; ok {
		return rs
	}
	return []Control{{URL: f.controls[component], Client: f.client}}
}

// onEach calls fn on every replica of component at once and returns, per
// replica, when it answered and its error.
func (f *faultSwitcher) onEach(component string, fn func(ctx context.Context, c Control) error) ([]time.Time, []error) {
	rs := f.replicasOf(component)
	at, errs := make([]time.Time, len(rs)), make([]error, len(rs))
	var wg sync.WaitGroup
	for i, c := range rs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), switchTimeout)
			defer cancel()
			errs[i] = fn(ctx, c)
			at[i] = time.Now().UTC()
			if errs[i] != nil && c.Name != "" {
				errs[i] = fmt.Errorf("replica %s: %w", c.Name, errs[i])
			}
		})
	}
	wg.Wait()
	return at, errs
}

// put sets fs on one replica.
func put(ctx context.Context, fs plan.Faults, c Control) error {
	switch {
	case fs.TCP != nil:
		return tcpproxy.Put(ctx, c.Client, c.URL, fs.TCP)
	case fs.Postgres != nil:
		return pgproxy.Put(ctx, c.Client, c.URL, fs.Postgres)
	}
	return faultproxy.NewClient(c.URL, c.Client).Set(ctx, fs.Faults)
}

// unset removes every fault from one replica.
func unset(ctx context.Context, c Control) error {
	return faultproxy.NewClient(c.URL, c.Client).Clear(ctx)
}

// faultBody is fs as the proxy gets it, for the events.
func faultBody(fs plan.Faults) []byte {
	var body []byte
	switch {
	case fs.TCP != nil:
		body, _ = json.Marshal(fs.TCP)
	case fs.Postgres != nil:
		body, _ = json.Marshal(fs.Postgres)
	default:
		body, _ = json.Marshal(fs.Faults)
	}
	return body
}

// set puts fs on every replica of its proxy and returns when the last one
// acknowledged it, and whether every one did. Each replica's switch is an
// event of its own.
func (f *faultSwitcher) set(fs plan.Faults, probe bool) (time.Time, bool) {
	at, errs := f.onEach(fs.Component, func(ctx context.Context, c Control) error { return put(ctx, fs, c) })
	rs := f.replicasOf(fs.Component)
	body := faultBody(fs)
	f.mu.Lock()
	defer f.mu.Unlock()
	action := rundata.FaultSet
	if probe {
		action = rundata.FaultProbeSet
	}
	last, took := time.Time{}, false
	for i, err := range errs {
		if err == nil {
			took = true
			f.evs = append(f.evs, rundata.FaultEvent{Time: at[i], Dependency: fs.Dependency, Action: action, Faults: body, Replica: rs[i].Name})
		}
		if at[i].After(last) {
			last = at[i]
		}
	}
	if took { // in place (to be removed) once any replica took it
		f.active = append(f.active, activeFaults{fs, probe})
	}
	if err := errors.Join(errs...); err != nil {
		f.err = fmt.Errorf("set fault on %s: %w", fs.Dependency, err)
		if f.abort != nil {
			f.abort() // a fault phase without its fault measures nothing
		}
		return last, false
	}
	return last, true
}

// clear removes every fault set in place.
func (f *faultSwitcher) clear() {
	f.switching.Lock()
	defer f.switching.Unlock()
	f.clearLocked()
}

// clearLocked is clear with switching held.
func (f *faultSwitcher) clearLocked() {
	f.mu.Lock()
	active := f.active
	f.active = nil
	f.mu.Unlock()
	for _, fs := range active {
		action := rundata.FaultClear
		if fs.probe {
			action = rundata.FaultProbeClear
		}
		if err := f.unsetAll(fs, action, ""); err != nil {
			f.mu.Lock()
			f.err = fmt.Errorf("clear fault on %s: %w", fs.Dependency, err)
			f.mu.Unlock()
		}
	}
}

// unsetAll removes fs from every replica of its proxy, recording action
// (with reason) per replica; a fault set that a replica still has stays
// active, to be removed again. It returns the replicas' errors.
func (f *faultSwitcher) unsetAll(fs activeFaults, action, reason string) error {
	at, errs := f.onEach(fs.Component, unset)
	rs := f.replicasOf(fs.Component)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, err := range errs {
		if err == nil {
			f.evs = append(f.evs, rundata.FaultEvent{Time: at[i], Dependency: fs.Dependency, Action: action, Reason: reason, Replica: rs[i].Name})
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		f.active = append(f.active, fs)
	}
	return err
}

// abortAll removes every fault in place at once, for a stop condition
// met (reason is what was seen): each removal is recorded as a FaultAbort
// event, and no fault is set again in the run. It returns when the last
// fault was gone (the present when none was in place any more), or zero
// when removing one failed (it stays in place for clear to retry).
func (f *faultSwitcher) abortAll(reason string) time.Time {
	f.switching.Lock()
	defer f.switching.Unlock()
	f.watch.disarm()
	f.mu.Lock()
	f.aborted = true
	active := f.active
	f.active = nil
	f.mu.Unlock()
	cleared := time.Now().UTC()
	var failed bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, fs := range active {
		wg.Go(func() {
			err := f.unsetAll(fs, rundata.FaultAbort, reason)
			now := time.Now().UTC()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				f.mu.Lock()
				f.err = fmt.Errorf("clear fault on %s for a stop condition: %w", fs.Dependency, err)
				f.mu.Unlock()
				return
			}
			if now.After(cleared) {
				cleared = now
			}
		})
	}
	wg.Wait()
	if failed {
		return time.Time{}
	}
	return cleared
}

// onResult is the load generator's OnResult: the stop conditions' watcher
// takes every result; nil without one.
func (f *faultSwitcher) onResult() func(loadgen.ResultEvent) {
	if f.watch == nil {
		return nil
	}
	return f.watch.onResult
}

// failure is the first switch error, or nil.
func (f *faultSwitcher) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *faultSwitcher) events() []rundata.FaultEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]rundata.FaultEvent(nil), f.evs...)
}

// runFiles are the files a run streams into while it runs, each behind a
// buffer; close flushes and closes them all.
type runFiles struct {
	windows, metrics *bufio.Writer
	raw, hdr         map[string]io.Writer // endpoint → writer; hdr is nil unless asked for
	burstRaw         map[string]io.Writer // burst label → writer

	files []*os.File
	bufs  []*bufio.Writer
	once  sync.Once
	err   error
}

func openRunFiles(dir string, endpoints, bursts []string, hdrLogs bool) (*runFiles, error) {
	f := &runFiles{raw: map[string]io.Writer{}, burstRaw: map[string]io.Writer{}}
	open := func(name string, size int) (*bufio.Writer, error) {
		h, err := createFile(dir, name)
		if err != nil {
			_ = f.close()
			return nil, fmt.Errorf("results: %w", err)
		}
		w := bufio.NewWriterSize(h, size)
		f.files, f.bufs = append(f.files, h), append(f.bufs, w)
		return w, nil
	}
	var err error
	if f.windows, err = open(rundata.WindowsFile, 4<<10); err != nil {
		return nil, err
	}
	if f.metrics, err = open(rundata.MetricsFile, 4<<10); err != nil {
		return nil, err
	}
	if hdrLogs {
		f.hdr = map[string]io.Writer{}
	}
	for _, e := range endpoints {
		if f.raw[e], err = open(rundata.RawFilePrefix+e+".bin", 64<<10); err != nil {
			return nil, err
		}
		if hdrLogs {
			if f.hdr[e], err = open(rundata.HdrLogPrefix+e+".hlog", 4<<10); err != nil {
				return nil, err
			}
		}
	}
	for _, b := range bursts {
		if f.burstRaw[b], err = open(rundata.BurstRawPrefix+b+".bin", 4<<10); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// burstLabels are the labels of the load's bursts.
func burstLabels(l plan.Load) []string {
	out := make([]string, len(l.Bursts))
	for i, b := range l.Bursts {
		out[i] = b.Label
	}
	return out
}

// close flushes and closes every file once; later calls return the same error.
func (f *runFiles) close() error {
	f.once.Do(func() {
		for _, w := range f.bufs {
			if err := w.Flush(); err != nil && f.err == nil {
				f.err = err
			}
		}
		for _, h := range f.files {
			if err := h.Close(); err != nil && f.err == nil {
				f.err = err
			}
		}
	})
	return f.err
}

// maxQuietSpan bounds how long a run samples the quiet service after its
// load.
const maxQuietSpan = 5 * time.Second

// quietSpan is how long the sampler runs on after the load of a run with a
// fault and pool metrics so that the run records its service quiet: every call ended (T and the longest queue
// wait after the last request) and two samples more. A pool that still has
// permits in use then, with no call in flight, lost them (measure's
// LeakRule); one whose samples under load only looked so did not.
func quietSpan(meta *rundata.RunMeta, interval time.Duration) time.Duration {
	return min(meta.Timeout+meta.LongestWait()+2*interval, maxQuietSpan)
}

// settle waits d or until ctx ends.
func settle(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
