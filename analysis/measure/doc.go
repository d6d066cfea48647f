// Package measure computes one run's numbers from its data (a rundir.Run):
// the run summary every verdict reads (RunSummary), the resource that ran
// out first, the limits inferred from the proxies, the noise floor,
// Little's-law demand, and each claim family's run statistics, one file a
// family (recovery, leak and limits; policy; cpu; conns; fleet). Estimate
// and its bootstrap interval, the numbers over repeats, live here too.
//
// Run holds a run's data (Data) and only the entry points the other
// packages call; each concern's numbers are a small type of its own over
// that data (callGraph, connPools, cpuSeries, exhaustionScan, leakScan,
// limitChecker, recoveryScan, timeSplits, …), or a function of it.
package measure
