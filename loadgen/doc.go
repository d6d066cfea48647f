// Package loadgen drives open-model load at per-phase constant rates with
// one vegeta attacker per endpoint, classifies every result (docs/design.md §4),
// records per-window per-endpoint statistics with HdrHistogram in memory
// that is O(windows), and judges whether a run kept the open model
// (validity).
package loadgen
