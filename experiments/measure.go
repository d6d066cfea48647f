package experiments

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/analysis"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// runPhases returns the non-empty phases of a run of condition c, with c's
// rate overrides in the fault phase.
func (s *Spec) runPhases(c *Condition) []loadgen.Phase {
	ph := s.phases()
	fr, base := s.FaultRates(c), s.Load.Rates
	for i := range ph {
		if ph[i].Name != analysis.PhaseFault {
			continue
		}
		if fr.A != base.A || fr.B != base.B {
			ph[i].Rates = map[string]float64{"a": fr.A, "b": fr.B}
		}
	}
	return ph
}

// phases returns the non-empty phases of the spec in order.
func (s *Spec) phases() []loadgen.Phase {
	var out []loadgen.Phase
	for _, p := range []loadgen.Phase{
		{Name: analysis.PhaseWarmup, Duration: s.Phases.Warmup.D},
		{Name: analysis.PhaseBaseline, Duration: s.Phases.Baseline.D},
		{Name: analysis.PhaseFault, Duration: s.Phases.Fault.D},
		{Name: analysis.PhaseRecovery, Duration: s.Phases.Recovery.D},
	} {
		if p.Duration > 0 {
			out = append(out, p)
		}
	}
	return out
}

// measure loads the stack through the phases, flips the condition's fault
// at the fault phase boundaries, samples metrics, and writes windows,
// phases, raw results and metrics into rundir. It fills meta's phases,
// faults and validity.
func (r *Runner) measure(ctx context.Context, rundir string, run Run, st *Stack, meta *analysis.RunMeta) (*loadgen.Report, error) {
	files, err := openRunFiles(rundir, r.HdrLogs)
	if err != nil {
		return nil, err
	}
	defer files.close()

	sctx, stopSampler := context.WithCancel(ctx)
	sampler := &Sampler{Targets: st.Samples, Out: files.metrics, Interval: r.SampleInterval}
	if r.Progress != nil {
		sampler.OnSample = func(s []analysis.MetricSample) { r.Progress.Pools(run, s) }
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = sampler.Run(sctx) }()

	lctx, abort := context.WithCancel(ctx)
	defer abort()
	sw := &faultSwitcher{run: run, controls: st.Controls, abort: abort}
	cfg, err := r.loadConfig(run, st, files, sw)
	if err != nil {
		stopSampler()
		wg.Wait()
		return nil, err
	}
	rep, runErr := loadgen.Run(lctx, cfg)
	if err := sw.failure(); err != nil && ctx.Err() == nil {
		runErr = err // it stopped the load early; the load's own error is only the cancel
	}
	stopSampler()
	wg.Wait()
	sw.clear() // never leave a fault behind, even when interrupted

	meta.Faults = sw.events()
	if rep != nil {
		fillMeta(meta, rep)
		if err := writePhases(rundir, rep); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := files.close(); err != nil && runErr == nil {
		runErr = err
	}
	return rep, runErr
}

// loadConfig builds the load generator's configuration for one run.
func (r *Runner) loadConfig(run Run, st *Stack, files *runFiles, sw *faultSwitcher) (loadgen.Config, error) {
	s := r.Spec
	var rules *loadgen.Rules
	if s.External != nil && s.External.Rules != nil {
		var rs loadgen.Rules
		if err := s.External.Rules.Decode(&rs); err != nil {
			return loadgen.Config{}, fmt.Errorf("external.rules: %w", err)
		}
		rules = &rs
	}
	rates := s.Load.Rates // the fault phase may override them (runPhases)
	targets := []loadgen.Target{
		{Name: "a", URL: st.Targets["a"], Rate: rates.A, Rules: rules},
		{Name: "b", URL: st.Targets["b"], Rate: rates.B, Rules: rules},
	}
	enc := json.NewEncoder(files.windows)
	return loadgen.Config{
		Targets:             targets,
		Phases:              s.runPhases(run.Condition),
		Timeout:             s.Load.ClientTimeout.D,
		Window:              s.Load.Window.D,
		Raw:                 files.raw,
		HdrLog:              files.hdr,
		OnPhase:             sw.onPhase,
		OnWindow:            func(w loadgen.Window) { _ = enc.Encode(w) },
		Progress:            r.progressFunc(run),
		ExcludeFromValidity: []string{analysis.PhaseWarmup},
	}, nil
}

func (r *Runner) progressFunc(run Run) func(loadgen.Snapshot) {
	if r.Progress == nil {
		return nil
	}
	return func(s loadgen.Snapshot) { r.Progress.Snapshot(run, s) }
}

// fillMeta copies the phase spans and validity verdicts of rep into meta.
func fillMeta(meta *analysis.RunMeta, rep *loadgen.Report) {
	seen := map[string]bool{}
	for _, p := range rep.Phases {
		if !seen[p.Phase] {
			seen[p.Phase] = true
			meta.Phases = append(meta.Phases, analysis.PhaseSpan{Name: p.Phase, Start: p.Start, End: p.End})
		}
		if p.Excluded {
			continue
		}
		meta.Validity = append(meta.Validity, analysis.PhaseValidity{
			Endpoint: p.Endpoint, Phase: p.Phase, Valid: p.Valid, Reasons: p.Reasons,
			TargetRate: p.TargetRate, AchievedRate: p.AchievedRate, LagP99: p.LagP99,
			HarnessErrors: p.HarnessErrors,
		})
	}
}

// writePhases writes phases.json: the merged histograms per endpoint and
// phase. loadgen.PhaseStats is a superset of analysis.PhaseSummary with the
// same JSON names, so the load generator's own records are written as they are.
func writePhases(rundir string, rep *loadgen.Report) error {
	return writeJSONAtomic(filepath.Join(rundir, analysis.PhasesFile), rep.Phases)
}

// faultSwitcher turns the condition's fault on at the start of the fault
// phase and off at the start of recovery, through the proxy's control API,
// and records when the proxy acknowledged each switch. Its callbacks run on
// the load generator's phase goroutine; events and clear are called after
// loadgen.Run returned.
type faultSwitcher struct {
	run      Run
	controls map[string]string

	// abort, if set, stops the load when a switch fails.
	abort func()

	mu     sync.Mutex
	evs    []analysis.FaultEvent
	active string // dependency with a fault set, "" if none
	err    error
}

// switchTimeout bounds one control call.
const switchTimeout = 5 * time.Second

func (f *faultSwitcher) onPhase(p loadgen.Phase, _ time.Time) {
	c := f.run.Condition
	switch {
	case p.Name == analysis.PhaseFault && len(c.Faults) > 0:
		f.set(c.Dependency, c.Faults)
	case p.Name == analysis.PhaseRecovery:
		f.clear()
	}
}

func (f *faultSwitcher) set(dep string, faults []Fault) {
	fs := make([]faultproxy.Fault, len(faults))
	for i, flt := range faults {
		fs[i] = flt.proxyFault()
	}
	ctx, cancel := context.WithTimeout(context.Background(), switchTimeout)
	err := faultproxy.NewClient(f.controls[dep], nil).Set(ctx, fs)
	cancel()
	body, _ := json.Marshal(fs)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.err = fmt.Errorf("set fault on %s: %w", dep, err)
		if f.abort != nil {
			f.abort() // a fault phase without its fault measures nothing
		}
		return
	}
	f.active = dep
	f.evs = append(f.evs, analysis.FaultEvent{Time: time.Now().UTC(), Dependency: dep, Action: "set", Faults: body})
}

func (f *faultSwitcher) clear() {
	f.mu.Lock()
	dep := f.active
	f.mu.Unlock()
	if dep == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), switchTimeout)
	err := faultproxy.NewClient(f.controls[dep], nil).Clear(ctx)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.err = fmt.Errorf("clear fault on %s: %w", dep, err)
		return
	}
	f.active = ""
	f.evs = append(f.evs, analysis.FaultEvent{Time: time.Now().UTC(), Dependency: dep, Action: "clear"})
}

// failure is the first switch error, or nil.
func (f *faultSwitcher) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *faultSwitcher) events() []analysis.FaultEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]analysis.FaultEvent(nil), f.evs...)
}

// runFiles are the files a run streams into while it runs, each behind a
// buffer; close flushes and closes them all.
type runFiles struct {
	windows, metrics *bufio.Writer
	raw, hdr         map[string]io.Writer // endpoint → writer; hdr is nil unless asked for

	files []*os.File
	bufs  []*bufio.Writer
	once  sync.Once
	err   error
}

func openRunFiles(dir string, hdrLogs bool) (*runFiles, error) {
	f := &runFiles{raw: map[string]io.Writer{}}
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
	if f.windows, err = open(analysis.WindowsFile, 4<<10); err != nil {
		return nil, err
	}
	if f.metrics, err = open(analysis.MetricsFile, 4<<10); err != nil {
		return nil, err
	}
	if hdrLogs {
		f.hdr = map[string]io.Writer{}
	}
	for _, e := range []string{"a", "b"} {
		if f.raw[e], err = open(analysis.RawFilePrefix+e+".bin", 64<<10); err != nil {
			return nil, err
		}
		if hdrLogs {
			if f.hdr[e], err = open(analysis.HdrLogPrefix+e+".hlog", 4<<10); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
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

// LoadDuration is the length of one run's load: the sum of its phases.
func (s *Spec) LoadDuration() time.Duration {
	var d time.Duration
	for _, p := range s.phases() {
		d += p.Duration
	}
	return d
}
