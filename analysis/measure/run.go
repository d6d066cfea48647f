package measure

import "github.com/bulkheadlab/bulkheadlab/analysis/rundir"

// Run is one run as the measurements see it: the data read from its folder
// and its series (Data), with the entry points that compute its numbers.
type Run struct{ Data *rundir.Run }
