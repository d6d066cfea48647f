package loadgen

import (
	"encoding/json"
	"fmt"
	"time"
)

// shardWire is what of a Config travels to a shard: the load, not the
// outputs or the callbacks, nor the validity rules (judged where the
// results are merged).
type shardWire struct {
	Targets      []Target      `json:"targets"`
	Phases       []Phase       `json:"phases"`
	Timeout      time.Duration `json:"timeout"`
	Window       time.Duration `json:"window"`
	LagThreshold time.Duration `json:"lag_threshold"`
	MaxWorkers   uint64        `json:"max_workers,omitempty"`
	Arrivals     Arrivals      `json:"arrivals"`
	InjectLag    time.Duration `json:"inject_lag,omitempty"`
	Seed         int64         `json:"seed"`
	Bursts       []Burst       `json:"bursts,omitempty"`
	Shard        Shard         `json:"shard"`
}

// MarshalShard encodes the part of cfg that a shard runs (see Shard and
// PrepareShard) as JSON.
func MarshalShard(cfg Config) ([]byte, error) {
	return json.Marshal(shardWire{Targets: cfg.Targets, Phases: cfg.Phases, Timeout: cfg.Timeout, Window: cfg.Window,
		LagThreshold: cfg.LagThreshold, MaxWorkers: cfg.MaxWorkers, Arrivals: cfg.Arrivals, InjectLag: cfg.InjectLag,
		Seed: cfg.Seed, Bursts: cfg.Bursts, Shard: cfg.Shard})
}

// UnmarshalShard decodes what MarshalShard encoded; the Config still has
// to pass PrepareShard.
func UnmarshalShard(b []byte) (Config, error) {
	var w shardWire
	if err := json.Unmarshal(b, &w); err != nil {
		return Config{}, fmt.Errorf("%w: shard config: %v", ErrInvalidConfig, err)
	}
	return Config{Targets: w.Targets, Phases: w.Phases, Timeout: w.Timeout, Window: w.Window,
		LagThreshold: w.LagThreshold, MaxWorkers: w.MaxWorkers, Arrivals: w.Arrivals, InjectLag: w.InjectLag,
		Seed: w.Seed, Bursts: w.Bursts, Shard: w.Shard}, nil
}
