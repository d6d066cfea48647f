package experiments

import (
	"github.com/bulkheadlab/bulkheadlab/service"

	"fmt"
	"hash/fnv"
	"net"
	"net/url"
)

// Run is one cell of the matrix in one repeat. It is a value; the
// pointers it holds point into the resolved spec and must not be mutated.
type Run struct {
	// ID is "<condition>-<mode>-r<repeat>", e.g. "slow-shared-r1"; it is
	// also the run's folder name.
	ID        string
	Condition *Condition
	Mode      *Mode
	Repeat    int // 1-based
	// Seed is derived from the spec's seed and the ID, so a run keeps its
	// seed when the matrix changes around it.
	Seed int64
}

// RunID builds a run ID.
func RunID(condition, mode string, repeat int) string {
	return fmt.Sprintf("%s-%s-r%d", condition, mode, repeat)
}

// Expand returns the matrix of a resolved spec in execution order:
// conditions × modes × repeats with the repeats interleaved — repeat 1 of
// every cell, then repeat 2 — so that drift cannot pose as an effect.
// Within a repeat, the modes of one condition run back to back.
func (s *Spec) Expand() []Run {
	runs := make([]Run, 0, s.Repeats*len(s.Conditions)*len(s.Modes))
	for r := 1; r <= s.Repeats; r++ {
		for ci := range s.Conditions {
			for mi := range s.Modes {
				c, m := &s.Conditions[ci], &s.Modes[mi]
				id := RunID(c.Name, m.Name, r)
				runs = append(runs, Run{ID: id, Condition: c, Mode: m, Repeat: r, Seed: deriveSeed(s.Seed, id)})
			}
		}
	}
	return runs
}

// ComponentSeed is the seed of one component of the run ("dep-A",
// "proxy-B"...), the same whichever launcher starts it.
func (r Run) ComponentSeed(component string) int64 { return deriveSeed(r.Seed, component) }

// deriveSeed mixes the experiment seed with a run ID (FNV-1a then a
// splitmix64 finaliser) into a non-negative seed.
func deriveSeed(seed int64, id string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, id)
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

// PoolLayout is one pool of the service in a mode.
type PoolLayout struct {
	Name      string   // "shared", "a" or "b"
	Limit     int      // permits
	Queue     int      // queue length
	Endpoints []string // endpoints drawing from it
}

// Pools returns the service's pools in mode m, per the serve CLI contract:
// shared has one pool of P with queue Q; bulkhead has "a" and "b" of P/2
// and Q/2 each unless the mode sets them.
func (s *Spec) Pools(m *Mode) []PoolLayout {
	p, q := s.Service.PoolSize, *s.Service.Queue
	if m.Name != ModeBulkhead {
		return []PoolLayout{{Name: "shared", Limit: p, Queue: q, Endpoints: []string{"a", "b"}}}
	}
	// An odd P or Q gives the extra unit to a, as the service does.
	sizes, queues := PerPool{A: p - p/2, B: p / 2}, PerPool{A: q - q/2, B: q / 2}
	if m.PoolSizes != nil {
		sizes = *m.PoolSizes
	}
	if m.Queues != nil {
		queues = *m.Queues
	}
	return []PoolLayout{
		{Name: "a", Limit: sizes.A, Queue: queues.A, Endpoints: []string{"a"}},
		{Name: "b", Limit: sizes.B, Queue: queues.B, Endpoints: []string{"b"}},
	}
}

// serviceConfig is the service's configuration in mode m: the one source
// for the in-process launcher and, rendered as flags, for ServeArgs.
func (s *Spec) serviceConfig(m *Mode, depA, depB string, broken bool) service.Config {
	lc := service.LayoutConfig{Mode: service.Mode(m.Name), PoolSize: s.Service.PoolSize, Queue: *s.Service.Queue,
		MaxWait: s.Service.MaxWait.D, BrokenSharedBulkhead: broken}
	if m.PoolSizes != nil {
		lc.PoolSizes = map[string]int{"a": m.PoolSizes.A, "b": m.PoolSizes.B}
	}
	if m.Queues != nil {
		lc.Queues = map[string]int{"a": m.Queues.A, "b": m.Queues.B}
	}
	return service.Config{Layout: lc, Timeout: s.Service.Timeout.D, Conns: s.Service.Conns, DepA: depA, DepB: depB}
}

// ServeArgs returns the `bulkheadlab serve` flags (without --listen and
// the dependency URLs) for mode m: serviceConfig rendered as flags.
func (s *Spec) ServeArgs(m *Mode) []string {
	c := s.serviceConfig(m, "", "", false)
	l := c.Layout
	args := []string{
		"--mode", string(l.Mode),
		"--pool-size", fmt.Sprint(l.PoolSize),
		"--queue", fmt.Sprint(l.Queue),
		"--max-wait", l.MaxWait.String(),
		"--timeout", c.Timeout.String(),
		"--conns", fmt.Sprint(c.Conns),
	}
	perPool := func(flag string, v map[string]int) {
		if v != nil {
			args = append(args, flag, fmt.Sprintf("a=%d,b=%d", v["a"], v["b"]))
		}
	}
	perPool("--pool-sizes", l.PoolSizes)
	perPool("--queues", l.Queues)
	return args
}

// DepArgs returns the `bulkheadlab dep` flags (without --listen) for the
// dependency named "A" or "B".
func (s *Spec) DepArgs(name string, seed int64) []string {
	d := s.Dependencies.A
	if name == "B" {
		d = s.Dependencies.B
	}
	return []string{"--name", name, "--latency", d.Latency.D.String(), "--jitter", d.Jitter.D.String(),
		"--seed", fmt.Sprint(seed), "--size", fmt.Sprint(d.Size)}
}

// FaultRates returns the endpoint rates during the fault phase of c:
// load.rates with c's overrides. The other phases run at load.rates.
func (s *Spec) FaultRates(c *Condition) Rates {
	r := s.Load.Rates
	if c.Rates != nil {
		if c.Rates.A > 0 {
			r.A = c.Rates.A
		}
		if c.Rates.B > 0 {
			r.B = c.Rates.B
		}
	}
	return r
}

// RemoteTargets lists the hosts of an external spec that are not loopback;
// the runner refuses them unless the user allows remote targets.
func (s *Spec) RemoteTargets() []string {
	if s.External == nil {
		return nil
	}
	var out []string
	x := s.External
	for _, raw := range []string{x.Targets.A, x.Targets.B, x.Upstreams.A, x.Upstreams.B} {
		u, err := url.Parse(raw)
		if err != nil || !isLoopback(u.Hostname()) {
			out = append(out, raw)
		}
	}
	// A proxy listening beyond loopback would be an open forwarder.
	for _, addr := range []string{x.Proxies.A, x.Proxies.B} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || !isLoopback(host) {
			out = append(out, addr)
		}
	}
	return out
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
