package loadgen

import "github.com/bulkheadlab/bulkheadlab/internal/rundata"

// The records the load generator produces are defined by the run-data
// contract (package rundata); these names are aliases of those definitions.
type (
	// Class is the outcome class of one request (docs/design.md §4).
	Class = rundata.Class
	// Counts holds a count per class.
	Counts = rundata.Counts
	// Quantiles summarises a closed latency histogram.
	Quantiles = rundata.Quantiles
	// Window is the closed statistics of one endpoint over one time window.
	Window = rundata.Window
	// PhaseStats is one endpoint over one phase: merged histograms and the
	// validity verdict.
	PhaseStats = rundata.PhaseStats
)

// The result classes, in report order.
const (
	ClassOK             = rundata.ClassOK
	ClassRejected       = rundata.ClassRejected
	ClassDepTimeout     = rundata.ClassDepTimeout
	ClassDepError       = rundata.ClassDepError
	ClassClientTimeout  = rundata.ClassClientTimeout
	ClassTransportError = rundata.ClassTransportError
	ClassOther          = rundata.ClassOther
	ClassCircuitOpen    = rundata.ClassCircuitOpen
	ClassLimited        = rundata.ClassLimited
	NumClasses          = rundata.NumClasses
)

// ParseClass parses a class name such as "dep_timeout".
func ParseClass(s string) (Class, error) { return rundata.ParseClass(s) }
