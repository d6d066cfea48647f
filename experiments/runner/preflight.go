package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
)

// ErrSetup is wrapped by every SetupError: the experiment could not be set
// up, and no run was started.
var ErrSetup = errors.New("the experiment could not be set up")

// SetupError is one thing the pre-flight found broken: a mode's component
// that did not start (its command did not run, exited, or never became
// ready), or an endpoint or the canary that did not answer at all (the
// connection was refused, closed or could not be made).
type SetupError struct {
	// Mode is the mode whose stack was being set up.
	Mode string
	// What names what failed as the spec gives it: `start command
	// "./svc --port 8080"`, "component proxy-A", "endpoint a: GET URL",
	// "the canary: GET URL".
	What string
	// Err is the failure.
	Err error
	// Output is the last lines the component wrote, if it failed to start.
	Output string
}

func (e *SetupError) Error() string {
	s := fmt.Sprintf("mode %s: %s: %s", e.Mode, e.What, inWords(e.Err))
	if e.Output != "" {
		s += "; its last output:\n    " + strings.ReplaceAll(e.Output, "\n", "\n    ")
	}
	return s
}

// Unwrap makes a SetupError both ErrSetup and its cause.
func (e *SetupError) Unwrap() []error { return []error{ErrSetup, e.Err} }

// PreflightReport is what a pre-flight that found nothing broken saw.
type PreflightReport struct {
	// Modes were set up, and Requests sent (one per endpoint URL and canary).
	Modes, Requests int
	Took            time.Duration
	// Warnings are what may still spoil the runs: an endpoint that answered
	// with an error status, one that did not answer within the time, a
	// component that did not stop cleanly.
	Warnings []string
}

// Preflight checks, before any load, that the experiment can run at all:
// for every mode it launches the stack of the mode's first run once (every
// component, the user's start command included, until ready, as a run
// would), sends one request as the load would to every endpoint's URL and
// the canary, and stops the stack. A component that does not start, or a
// request that gets no HTTP answer (refused, reset, closed, a name that
// does not resolve), is a SetupError (several are joined); an HTTP error
// status or a request still unanswered after the probe timeout is only a
// warning. On an error the components' logs are kept and named; it stops
// at the first mode that fails. Run calls it unless it already succeeded.
func (r *Runner) Preflight(ctx context.Context) (PreflightReport, error) {
	start := time.Now()
	var rep PreflightReport
	logs, err := r.preflightLogs()
	if err != nil {
		return rep, err
	}
	seen := map[string]bool{}
	for _, run := range r.Plan.Runs {
		if seen[run.Mode] {
			continue
		}
		seen[run.Mode] = true
		n, warns, err := r.preflightMode(ctx, preflightRun(run), logs)
		rep.Modes++
		rep.Requests += n
		rep.Warnings = append(rep.Warnings, warns...)
		if err != nil {
			if !strings.Contains(err.Error(), logs) {
				_ = os.RemoveAll(logs) // kept only when the error names a log
			}
			return rep, err
		}
	}
	_ = os.RemoveAll(logs)
	rep.Took = time.Since(start)
	r.preflighted = true
	return rep, nil
}

// preflightLogs makes the folder of the pre-flight's logs: in
// PreflightLogs if set, else a new temporary one.
func (r *Runner) preflightLogs() (string, error) {
	if r.PreflightLogs == "" {
		return os.MkdirTemp("", "bulkheadlab-preflight-")
	}
	return os.MkdirTemp(r.PreflightLogs, "preflight-")
}

// preflightRun is run as the pre-flight starts it: a start command's
// environment names no run.
func preflightRun(run plan.Run) plan.Run {
	comps := append([]plan.Component(nil), run.Components...)
	for i, c := range comps {
		if c.Command == nil {
			continue
		}
		cm := *c.Command
		cm.Env = append([]string(nil), cm.Env...)
		for j, kv := range cm.Env {
			if strings.HasPrefix(kv, plan.RunEnv+"=") {
				cm.Env[j] = plan.RunEnv + "=preflight"
			}
		}
		comps[i].Command = &cm
	}
	run.Components = comps
	return run
}

// preflightMode launches run's stack, probes its targets and stops it. It
// returns the number of requests sent and the warnings.
func (r *Runner) preflightMode(ctx context.Context, run plan.Run, logs string) (int, []string, error) {
	logPath := func(c string) string { return filepath.Join(logs, run.Mode+"-"+c+".log") }
	st, err := r.launcher().Launch(ctx, run, logPath)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		return 0, nil, startFailure(run, err)
	}
	var n int
	var warns []string
	var errs []error
	if !r.SkipTargetProbes {
		n, warns, errs = probeTargets(ctx, run, st)
		warns = append(warns, histogramWarnings(ctx, run)...)
	}
	if derr := st.Died(); derr != nil && ctx.Err() == nil {
		errs = append(errs, &SetupError{Mode: run.Mode, What: "a component exited during the pre-flight", Err: derr})
	}
	if serr := st.Stop(); serr != nil && ctx.Err() == nil {
		warns = append(warns, fmt.Sprintf("mode %s: stopping after the pre-flight: %v", run.Mode, serr))
	}
	if ctx.Err() != nil {
		return n, warns, ctx.Err()
	}
	return n, warns, errors.Join(errs...)
}

// startFailure is the SetupError of a Launch error: what did not start,
// with its last output.
func startFailure(run plan.Run, err error) error {
	var se *StartError
	if !errors.As(err, &se) {
		return &SetupError{Mode: run.Mode, What: "launching the components", Err: err}
	}
	what := "component " + se.Component
	for _, c := range run.Components {
		if c.Name == se.Component && c.Command != nil {
			what = fmt.Sprintf("start command %q", strings.Join(c.Command.Argv, " "))
		}
	}
	return &SetupError{Mode: run.Mode, What: what, Err: se, Output: logTail(se.Log, 5)}
}

// logTail returns the last n non-empty lines of the file at path (of its
// last 4 KiB), "" if there are none.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4096 {
		_, _ = f.Seek(st.Size()-4096, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// probeTimeout bounds one pre-flight request: the run's client timeout,
// within [2 s, 10 s].
func probeTimeout(run plan.Run) time.Duration {
	return min(max(run.Load.ClientTimeout, 2*time.Second), 10*time.Second)
}

// probeTargets sends one request, as the load would, to every URL of every
// endpoint and to the canary. It returns the number sent, warnings for
// error statuses and timeouts, and a SetupError per request that got no
// HTTP answer.
func probeTargets(ctx context.Context, run plan.Run, st *Stack) (int, []string, []error) {
	eps := run.Load.Endpoints
	if c := run.Load.Canary; c != nil {
		eps = append(append([]plan.Endpoint(nil), eps...), *c)
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: probeTimeout(run)}
	var n int
	var warns []string
	var errs []error
	for _, e := range eps {
		u, urls, err := resolveTargets(e, st.URLs)
		if err != nil {
			errs = append(errs, &SetupError{Mode: run.Mode, What: "endpoint " + e.Name, Err: err})
			continue
		}
		if len(urls) == 0 {
			urls = []string{u}
		}
		what := "endpoint " + e.Name
		if run.Load.Canary != nil && e.Name == run.Load.Canary.Name {
			what = "the canary"
		}
		for _, u := range urls {
			n++
			w, err := probe(ctx, hc, e, u)
			label := what + ": " + method(e) + " " + u
			switch {
			case err != nil:
				errs = append(errs, &SetupError{Mode: run.Mode, What: label, Err: err})
			case w != "":
				warns = append(warns, fmt.Sprintf("mode %s: %s: %s", run.Mode, label, w))
			}
		}
	}
	return n, warns, errs
}

// histogramWarnings scrapes the service's metrics once, after the probes,
// and warns of each histogram of the metric map (external.timing.histograms)
// that is not among them, or that the metrics did not answer.
func histogramWarnings(ctx context.Context, run plan.Run) []string {
	m := run.ServiceMetrics
	if m == nil || m.Map == nil || len(m.Map.Histograms) == 0 {
		return nil
	}
	hc := &http.Client{Timeout: probeTimeout(run)}
	vals, err := scrape(ctx, hc, m.URL, mapKeep(m.Map), mapBuckets(m.Map))
	if err != nil {
		return []string{fmt.Sprintf("mode %s: external.timing.histograms: the metrics at %s did not answer (%v): no histogram can be read", run.Mode, m.URL, err)}
	}
	var out []string
	for _, h := range m.Map.Histograms {
		found := false
		for k := range vals {
			name, _, _ := strings.Cut(k, "{")
			found = found || name == h+"_count" || name == h+"_bucket"
		}
		if !found {
			out = append(out, fmt.Sprintf("mode %s: external.timing.histograms: no histogram %s at %s after a request to every endpoint "+
				"(a misspelt name, not a histogram, or one with labels that has not observed yet); the report says whether the runs saw it", run.Mode, h, m.URL))
		}
	}
	return out
}

func method(e plan.Endpoint) string {
	if e.Method == "" {
		return http.MethodGet
	}
	return e.Method
}

// probe sends e's request to url. It returns an error when no HTTP answer
// came (and the client did not merely time out), and a warning for an
// answer that is not 2xx or for a timeout.
func probe(ctx context.Context, hc *http.Client, e plan.Endpoint, url string) (string, error) {
	var body io.Reader
	if len(e.Body) > 0 {
		body = strings.NewReader(string(e.Body))
	}
	req, err := http.NewRequestWithContext(ctx, method(e), url, body)
	if err != nil {
		return "", err
	}
	for k, vs := range e.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if isTimeout(err) && ctx.Err() == nil {
			return fmt.Sprintf("no answer within %s (the runs will show whether it answers under load)", hc.Timeout), nil
		}
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "answered " + resp.Status + " (not a setup error; the baseline health rule will judge it)", nil
	}
	return "", nil
}
