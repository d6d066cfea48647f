package main

import (
	"slices"
	"time"
)

// The pass-through comparison. A proxy's added latency at a quantile is a
// difference of two quantiles (proxied − direct), and at p99 both are
// tails: pooled over a run, one slow direct cell can flip its sign. So
// the verdicts use the rounds: in each round, a proxy's added q-quantile
// is its cell's q-quantile minus the direct cell's of the same round (the
// cells of a round run back to back, so drift of the machine between
// rounds cancels), and a proxy's added q is the median over the rounds of
// those. The pooled numbers (every round's latencies put together) are
// shown as well, not judged.

// passQuantiles are the quantiles reported per cell: p50, p90, p99.
var passQuantiles = [3]float64{0.5, 0.9, 0.99}

// cellQuantiles are a cell's p50, p90 and p99.
func cellQuantiles(lat []time.Duration) [3]time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	var out [3]time.Duration
	for i, q := range passQuantiles {
		out[i] = quantile(s, q)
	}
	return out
}

// median is the median of xs: the middle value, or the mean of the two
// middle ones for an even count; 0 if xs is empty.
func median(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

// addedByRound is, per round, proxied's quantile qi minus direct's of the
// same round (rounds that either lacks are left out).
func addedByRound(proxied, direct merged, qi int) []time.Duration {
	n := min(len(proxied.roundQ), len(direct.roundQ))
	out := make([]time.Duration, 0, n)
	for r := range n {
		out = append(out, proxied.roundQ[r][qi]-direct.roundQ[r][qi])
	}
	return out
}

// byRound is every round's quantile qi of m.
func byRound(m merged, qi int) []time.Duration {
	out := make([]time.Duration, 0, len(m.roundQ))
	for _, q := range m.roundQ {
		out = append(out, q[qi])
	}
	return out
}

// medianAdded is the judged added latency at quantile qi: the median over
// rounds of the per-round added quantile.
func medianAdded(proxied, direct merged, qi int) time.Duration {
	return median(addedByRound(proxied, direct, qi))
}

// pooledAdded is the added latency at quantile qi of every round's
// latencies put together.
func pooledAdded(proxied, direct merged, qi int) time.Duration {
	q := passQuantiles[qi]
	return quantile(proxied.lat, q) - quantile(direct.lat, q)
}

// passVerdict compares ours with toxiproxy at quantile qi of m (direct,
// ours, toxiproxy): met if ours' median added latency is no more than
// toxiproxy's.
type passVerdict struct {
	ours, toxi             time.Duration // median over rounds of the added quantile
	pooledOurs, pooledToxi time.Duration
	roundsNoWorse, rounds  int // rounds in which ours' added quantile ≤ toxiproxy's
	met                    bool
}

func judgePass(m [3]merged, qi int) passVerdict {
	d, o, t := m[0], m[1], m[2]
	v := passVerdict{
		ours: medianAdded(o, d, qi), toxi: medianAdded(t, d, qi),
		pooledOurs: pooledAdded(o, d, qi), pooledToxi: pooledAdded(t, d, qi),
	}
	ao, at := addedByRound(o, d, qi), addedByRound(t, d, qi)
	for r := range min(len(ao), len(at)) {
		v.rounds++
		if ao[r] <= at[r] {
			v.roundsNoWorse++
		}
	}
	v.met = v.ours <= v.toxi
	return v
}
