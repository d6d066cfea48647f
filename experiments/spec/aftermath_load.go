package spec

import (
	"fmt"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// CancelSpec is a condition's cancel: clients that give up on a share of
// their requests After they sent them (the service sees its client go away
// mid-call).
type CancelSpec struct {
	Share float64  `yaml:"share"`
	After Duration `yaml:"after"`
	// Endpoints whose clients give up (default: the culprit).
	Endpoints []string `yaml:"endpoints,omitempty"`
}

// BurstSpec is a condition's bursts: Requests requests at one instant on
// each of Endpoints, every Every through the fault phase.
type BurstSpec struct {
	// Requests per burst (0: auto, as for a probe).
	Requests int `yaml:"requests,omitempty"`
	// Every is the time between bursts (default 4T).
	Every Duration `yaml:"every,omitempty"`
	// Endpoints that get the bursts (default: the culprit).
	Endpoints []string `yaml:"endpoints,omitempty"`
}

// Defaults of the leak hunt's load shapes.
const (
	// DefaultCancelShare and DefaultCancelAfterT: the cancel condition's
	// clients give up on half of the culprit's requests after 0.5T.
	DefaultCancelShare  = 0.5
	DefaultCancelAfterT = 0.5
	// DefaultBurstEveryT is the time between a condition's bursts, in T.
	DefaultBurstEveryT = 4
	// DefaultProbeLatencyT is the latency the proxies add during a probe.
	DefaultProbeLatencyT = 0.25
	// probeLead is how long after a probe phase starts its first burst
	// goes: the endpoints' last requests of the phase before have left.
	probeLead = 50 * time.Millisecond
	// probeTail lets the proxies' peak of the last burst be scraped within
	// the phase (one sample interval).
	probeTail = 250 * time.Millisecond
	// minBurst and externalBurst size an automatic burst: at least
	// minBurst, and externalBurst for a user's service without declared
	// pools.
	minBurst      = 50
	externalBurst = 100
	// probeRounds is how many bursts each endpoint gets in a probe phase,
	// in turn with the others': the most calls in flight over them is the
	// limit. One burst can see fewer than the limit when the service took
	// longer to admit the burst than the probe's latency holds a call
	// (a Node service beside other work let 7 of its 10 overlap once); the
	// first round also opens the service's connections to its
	// dependencies for the next.
	probeRounds = 2
)

// resolveAftermath makes the load shapes' durations absolute (T is t).
func (s aftermathPart) resolveAftermath(t time.Duration) {
	abs := func(d *Duration) { *d = Abs(d.Resolve(t)) }
	if p := s.Load.Probe; p != nil {
		if p.Latency == (Duration{}) {
			p.Latency = RelT(DefaultProbeLatencyT)
		}
		abs(&p.Latency)
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Cancel != nil {
			abs(&c.Cancel.After)
		}
		if b := c.Bursts; b != nil {
			if b.Every == (Duration{}) {
				b.Every = RelT(DefaultBurstEveryT)
			}
			abs(&b.Every)
		}
	}
}

// aftermathDefaults gives a condition's cancel and bursts their endpoints.
func (s aftermathPart) aftermathDefaults(c *Condition) {
	culprit := []string{s.Expectations.Culprit}
	if c.Cancel != nil && len(c.Cancel.Endpoints) == 0 {
		c.Cancel.Endpoints = culprit
	}
	if c.Bursts != nil && len(c.Bursts.Endpoints) == 0 {
		c.Bursts.Endpoints = culprit
	}
}

// validateAftermath checks a condition's cancel and bursts and the probe.
func (s aftermathPart) validateAftermath(p *problems) {
	known := func(path string, eps []string) {
		for j, e := range eps {
			if !slices.Contains(s.EndpointNames(), e) {
				p.add(fmt.Sprintf("%s[%d]", path, j), "must be one of %v, got %q", s.EndpointNames(), e)
			}
		}
	}
	for i, c := range s.Conditions {
		path := fmt.Sprintf("conditions[%d]", i)
		if x := c.Cancel; x != nil {
			if !(x.Share > 0 && x.Share <= 1) {
				p.add(path+".cancel.share", "must be in (0, 1], got %g", x.Share)
			}
			if x.After.D <= 0 || x.After.D >= s.Load.ClientTimeout.D {
				p.add(path+".cancel.after", "must be positive and below load.client_timeout (%v), got %v", s.Load.ClientTimeout.D, x.After.D)
			}
			known(path+".cancel.endpoints", x.Endpoints)
		}
		if b := c.Bursts; b != nil {
			if b.Requests < 0 || b.Requests > loadgen.MaxBurstRequests {
				p.add(path+".bursts.requests", "must be between 1 and %d (0: auto), got %d", loadgen.MaxBurstRequests, b.Requests)
			}
			if b.Every.D < s.Service.Timeout.D {
				p.add(path+".bursts.every", "must be at least T (%v) so that a burst drains before the next, got %v", s.Service.Timeout.D, b.Every.D)
			}
			known(path+".bursts.endpoints", b.Endpoints)
		}
	}
	if pr := s.Load.Probe; pr != nil {
		if pr.Requests < 0 || pr.Requests > loadgen.MaxBurstRequests {
			p.add("load.probe.requests", "must be between 1 and %d (0: auto), got %d", loadgen.MaxBurstRequests, pr.Requests)
		}
		if pr.Latency.D < 0 || pr.Latency.D >= s.Service.Timeout.D {
			p.add("load.probe.latency", "must be in [0, T) (T = %v), got %v", s.Service.Timeout.D, pr.Latency.D)
		}
	}
}

// burstSize is the automatic size of a burst in mode m: three times the
// largest pool's size and queue (at least minBurst), so that it fills any
// pool and its queue; externalBurst for a user's service without
// declared pools.
func (s aftermathPart) burstSize(m *Mode, requests int) int {
	if requests > 0 {
		return requests
	}
	most := 0
	if s.External != nil {
		for _, pl := range s.ExternalOf(m).Pools {
			most = max(most, pl.Size+pl.Queue)
		}
		if most == 0 {
			return externalBurst
		}
	} else {
		for _, pl := range s.Pools(m) {
			if !pl.Nested {
				most = max(most, pl.Limit+pl.Queue)
			}
		}
	}
	return min(loadgen.MaxBurstRequests, max(minBurst, 3*most))
}

// probeGap is the time between two bursts of a probe: a burst's admitted
// calls take the probe's latency (and the dependency's, within T), its
// queued ones wait at most the longest queue wait.
func (s aftermathPart) probeGap() time.Duration {
	return s.Load.Probe.Latency.D + s.Service.Timeout.D + s.Service.MaxWait.D
}

// probeDuration is the length of each probe phase: probeRounds bursts per
// endpoint, the endpoints in turn.
func (s aftermathPart) probeDuration() time.Duration {
	if s.Load.Probe == nil {
		return 0
	}
	return probeLead + time.Duration(probeRounds*len(s.Endpoints))*s.probeGap() + probeTail
}

// probePhase is a probe phase: every endpoint paused (the canary goes on).
func (s aftermathPart) probePhase(name string) loadgen.Phase {
	ph := loadgen.Phase{Name: name, Duration: s.probeDuration(), Rates: map[string]float64{}}
	for _, e := range s.Endpoints {
		ph.Rates[e.Name] = 0
	}
	return ph
}

// runBursts are the bursts of a run: a probe's, one per endpoint in turn at
// each probe phase, and the condition's through the fault phase.
func (s aftermathPart) runBursts(r Run, phases []loadgen.Phase) []loadgen.Burst {
	var out []loadgen.Burst
	var at time.Duration
	for _, ph := range phases {
		switch {
		case ph.Name == rundata.PhaseProbeBefore || ph.Name == rundata.PhaseProbeAfter:
			n := s.burstSize(r.Mode, s.Load.Probe.Requests)
			for k := range probeRounds {
				for i, e := range s.Endpoints {
					label := ph.Name + "-" + e.Name
					if k > 0 {
						label = fmt.Sprintf("%s-%d", label, k+1)
					}
					out = append(out, loadgen.Burst{Label: label, Target: e.Name, Requests: n,
						At: at + probeLead + time.Duration(k*len(s.Endpoints)+i)*s.probeGap()})
				}
			}
		case ph.Name == rundata.PhaseFault:
			if jb, ok := (jobsPart{s.Spec}).jobsBurst(r, at); ok { // jobs.go
				out = append(out, jb)
			}
			b := r.Condition.Bursts
			if b == nil {
				break
			}
			n := s.burstSize(r.Mode, b.Requests)
			// The last burst leaves T before the phase ends to drain.
			for k, t := 1, b.Every.D/2; t+s.Service.Timeout.D <= ph.Duration; k, t = k+1, t+b.Every.D {
				for _, e := range b.Endpoints {
					out = append(out, loadgen.Burst{Label: fmt.Sprintf("%s-%s-%d", r.Condition.Name, e, k), Target: e, Requests: n, At: at + t})
				}
			}
		}
		at += ph.Duration
	}
	return out
}

// faultPhaseCancel is the fault phase's cancel of condition c, nil without.
func faultPhaseCancel(c *Condition) map[string]loadgen.Cancel {
	if c.Cancel == nil {
		return nil
	}
	out := map[string]loadgen.Cancel{}
	for _, e := range c.Cancel.Endpoints {
		out[e] = loadgen.Cancel{Share: c.Cancel.Share, After: c.Cancel.After.D}
	}
	return out
}

// probeFaults are the faults every proxy applies during a probe phase: the
// probe's latency, so that a burst's calls overlap at the proxy.
func (s aftermathPart) probeFaults() []plan.Faults {
	p := s.Load.Probe
	if p == nil || p.Latency.D <= 0 {
		return nil
	}
	var out []plan.Faults
	for _, d := range s.DependencyNames() {
		out = append(out, postgresPart{s.Spec}.withPostgres(tcpPart{s.Spec}.withTCP(plan.Faults{Component: proxyComponent(d), Dependency: d,
			Faults: []faultproxy.Fault{{Type: faultproxy.TypeLatency, Percent: 100, Params: faultproxy.Delay{Latency: p.Latency.D, Distribution: "uniform"}}}}), nil))
	}
	return out
}
