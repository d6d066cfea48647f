// Package runner executes an experiment's plan (package plan): for every run
// it starts the components (as child processes of this binary, or in this
// process for tests), samples their metrics, drives the open-model load
// through the phases while switching faults, supervises the children, shows
// progress, and writes the results folder (the run-data contract of package
// rundata). It knows nothing of YAML specs or verdicts.
package runner
