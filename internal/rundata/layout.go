package rundata

import (
	"regexp"
	"strings"
)

// The layout of a results folder. The runner writes it with these names and
// types; the analysis reads it.
//
//	results/<experiment>/<UTC timestamp>/
//	    spec.yaml            the resolved spec of the whole experiment
//	    index.json           Index: the matrix, one entry per run, with status
//	    runs/<run id>/
//	        meta.json        RunMeta
//	        spec.yaml        the resolved spec of this run
//	        windows.jsonl    one Window per line, all endpoints
//	        phases.json      []PhaseStats: merged histograms per endpoint and phase
//	        bursts.json      []BurstStats: the load generator's bursts (when it has any)
//	        metrics.jsonl    one MetricSample per line
//	        results-a.bin    raw vegeta results of endpoint a (vegeta's gob encoding)
//	        results-b.bin
//	        hdr-a.hlog, hdr-b.hlog  HdrHistogram interval logs (with run --hdr-logs)
//	        burst-<label>.bin  raw vegeta results of one burst (when it has any)
//	        logs/<component>.log
//	    summary.json, report.md, index.html, *.png   written by the analysis
const (
	IndexFile      = "index.json"
	SpecFile       = "spec.yaml"
	RunsDir        = "runs"
	MetaFile       = "meta.json"
	WindowsFile    = "windows.jsonl"
	PhasesFile     = "phases.json"
	BurstsFile     = "bursts.json"
	MetricsFile    = "metrics.jsonl"
	LogsDir        = "logs"
	SummaryFile    = "summary.json"
	ReportFile     = "report.md"
	HTMLFile       = "index.html"
	RawFilePrefix  = "results-" // + endpoint + ".bin"
	HdrLogPrefix   = "hdr-"     // + endpoint + ".hlog"
	BurstRawPrefix = "burst-"   // + burst label + ".bin"
)

// Phase names, in order (docs/design.md §1): the runner labels windows, phase
// records and PhaseSpans with them, and the verdicts give them meaning.
const (
	PhaseWarmup   = "warmup"
	PhaseBaseline = "baseline"
	PhaseFault    = "fault"
	PhaseRecovery = "recovery"
	// PhaseProbeBefore and PhaseProbeAfter, when the load has a probe, come
	// before the baseline and after the recovery: the endpoints' load pauses
	// and a burst per endpoint shows the limits the proxies see.
	PhaseProbeBefore = "probe-before"
	PhaseProbeAfter  = "probe-after"
)

// CanaryEndpoint is the endpoint name of the canary in windows and phase
// records; no endpoint of a service can have it.
const CanaryEndpoint = "_canary"

// Run status values, in Index and RunMeta.
const (
	StatusPending     = "pending"     // not started
	StatusRunning     = "running"     // started; if found on disk, the runner died
	StatusComplete    = "complete"    // finished; data complete
	StatusInterrupted = "interrupted" // stopped by Ctrl-C or a crash; data partial
	StatusFailed      = "failed"      // the harness failed (a child died, ...)
	StatusSkipped     = "skipped"     // not run: repeats: auto stopped before its round, or a stop condition fired with on_abort: stop
	StatusStopped     = "stopped"     // the memory guard stopped it: the service's memory reached its ceiling (RunMeta.MemoryStop); data partial
)

// runIDRE is what a run ID may be: it names a folder under runs/.
var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,190}$`)

// ValidRunID reports whether id can be a run ID: a plain folder name of
// letters, digits, '_', '-' and '.', not starting with '.', so that no ID
// can name a path outside runs/.
func ValidRunID(id string) bool { return runIDRE.MatchString(id) && !strings.Contains(id, "..") }
