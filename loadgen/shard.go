package loadgen

import (
	"fmt"
	"hash/fnv"
)

// Shard is one of Count processes that together send a Config's load: each
// sends 1/Count of every target's rate in every phase, from the same t0,
// with arrivals of its own (see RunShard). The shards' requests together
// are the load of the whole Config:
//
//   - constant arrivals are interleaved: shard i sends requests i, i+Count,
//     i+2·Count, … of the unsharded schedule (every phase offset included),
//     so that N shards send exactly the requests one generator would;
//   - Poisson arrivals are independent Poisson processes, each seeded with
//     its shard's index, whose sum is the Poisson process of the full rate;
//   - the client's give-ups (Phase.Cancel) and a retrying client's jitter
//     are seeded per shard (each shard is a client of its own, as the
//     replicas of a real client are, with its own retry budget);
//   - bursts are fired by shard 0 alone, each at its instant.
//
// The zero value (and Count 1) is the whole load.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// MaxShards bounds Shard.Count.
const MaxShards = 1000

// sharded reports whether s splits the load.
func (s Shard) sharded() bool { return s.Count > 1 }

func (s Shard) validate() error {
	switch {
	case s.Count < 0 || s.Count > MaxShards:
		return invalid("shard.count", "%d is not in [0, %d]", s.Count, MaxShards)
	case s.Count == 0 && s.Index != 0, s.Count > 0 && (s.Index < 0 || s.Index >= s.Count):
		return invalid("shard.index", "%d is not in [0, %d)", s.Index, max(s.Count, 1))
	}
	return nil
}

// scale is the share of every rate the shard sends.
func (s Shard) scale() float64 {
	if !s.sharded() {
		return 1
	}
	return 1 / float64(s.Count)
}

// seed derives the shard's stream of a seed: the seed itself unsharded.
func (s Shard) seed(seed uint64) uint64 {
	if !s.sharded() {
		return seed
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "shard/%d/%d/%d", seed, s.Index, s.Count)
	return h.Sum64()
}

// firesBursts reports whether the shard fires the Config's bursts.
func (s Shard) firesBursts() bool { return s.Index == 0 }

// Shards returns the Count configurations of cfg split into n shards, in
// index order; n ≤ 1 returns cfg alone.
func Shards(cfg Config, n int) []Config {
	if n <= 1 {
		return []Config{cfg}
	}
	out := make([]Config, n)
	for i := range out {
		out[i] = cfg
		out[i].Shard = Shard{Index: i, Count: n}
	}
	return out
}
