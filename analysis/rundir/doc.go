// Package rundir reads a results folder as the runner wrote it
// (internal/rundata is the contract): the experiment's index and
// expectations, every run's meta, windows, phases and metric samples, what
// is missing or damaged in them, and the series a run's numbers are read
// from (phase spans, an endpoint's windows, a metric's points, a pool's
// metadata, a fleet instance's view).
package rundir
