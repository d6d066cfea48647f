package spec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// clientsPart is a spec as its clients family sees it: the clients' timeouts
// and retries.
type clientsPart struct{ *Spec }

// Clients is how the load generator's clients behave: by default they
// send each request once. `load.clients` applies to every mode; a mode's
// own `clients` replaces it (`clients: {}` is a client that never retries).
//
//	modes:
//	  - name: shared-retry
//	    pools: shared
//	    clients:
//	      retry: {attempts: 4, on: [rejected], backoff: 0.05T, jitter: 0.5}
type Clients struct {
	Retry *ClientRetry `yaml:"retry,omitempty"`
}

// ClientRetry is loadgen.Retry in a spec; durations may be relative to T,
// the seed is the run's.
type ClientRetry struct {
	// Attempts is the most attempts, the first included (2–10).
	Attempts int `yaml:"attempts"`
	// On names the result classes retried (default: every failure the
	// service answered and transport errors, not client timeouts).
	On         []string `yaml:"on,omitempty"`
	Backoff    Duration `yaml:"backoff,omitempty"`
	MaxBackoff Duration `yaml:"max_backoff,omitempty"`
	Jitter     float64  `yaml:"jitter,omitempty"`
	// RetryAfter is "ignore" (the default) or "honor": wait a response's
	// Retry-After before retrying it, and give up when it does not fit in
	// the client's deadline (load.client_timeout).
	RetryAfter string `yaml:"retry_after,omitempty"`
	// Budget limits the retries of all of an endpoint's requests.
	Budget *ClientBudget `yaml:"budget,omitempty"`
	// Endpoints are the endpoints whose clients retry (default: all).
	Endpoints []string `yaml:"endpoints,omitempty"`
}

// ClientBudget is loadgen.RetryBudget in a spec: ratio (a token budget:
// retries at most ratio × requests + reserve) or in_flight (failsafe-go's:
// retries in flight at most in_flight × requests in flight).
type ClientBudget struct {
	Ratio          float64 `yaml:"ratio,omitempty"`
	Reserve        int     `yaml:"reserve,omitempty"`
	InFlight       float64 `yaml:"in_flight,omitempty"`
	MinConcurrency int     `yaml:"min_concurrency,omitempty"`
}

// Retry-After handling of a ClientRetry.
const (
	RetryAfterIgnore = "ignore"
	RetryAfterHonor  = "honor"
)

// ClientsOf returns the clients of mode m: its own, or load.clients.
func (s *Spec) ClientsOf(m *Mode) *Clients {
	if m.Clients != nil {
		return m.Clients
	}
	return s.Load.Clients
}

// clientRetry returns the retry of endpoint ep's client in mode m (nil
// when it does not retry); seed seeds its jitter.
func (s clientsPart) clientRetry(m *Mode, ep string, seed uint64) *loadgen.Retry {
	c := s.ClientsOf(m)
	if c == nil || c.Retry == nil {
		return nil
	}
	r := c.Retry
	if len(r.Endpoints) > 0 && !slices.Contains(r.Endpoints, ep) {
		return nil
	}
	out, _ := r.loadgen(seed)
	return out
}

// loadgen is r as the load generator takes it; the error names a class
// that does not parse.
func (r *ClientRetry) loadgen(seed uint64) (*loadgen.Retry, error) {
	out := &loadgen.Retry{Attempts: r.Attempts, Backoff: r.Backoff.D, MaxBackoff: r.MaxBackoff.D, Jitter: r.Jitter,
		Seed: seed, HonorRetryAfter: r.RetryAfter == RetryAfterHonor}
	var errs []error
	for i, name := range r.On {
		c, err := loadgen.ParseClass(name)
		if err != nil {
			errs = append(errs, &loadgen.FieldError{Field: fmt.Sprintf("on[%d]", i), Msg: err.Error()})
			continue
		}
		out.On = append(out.On, c)
	}
	if b := r.Budget; b != nil {
		out.Budget = &loadgen.RetryBudget{Ratio: b.Ratio, Reserve: b.Reserve, InFlight: b.InFlight, MinConcurrency: b.MinConcurrency}
	}
	return out, errors.Join(errs...)
}

// validateClients checks load.clients and every mode's clients.
func (s clientsPart) validateClients(p *problems) {
	s.validateClient(p, "load.clients", s.Load.Clients)
	for i := range s.Modes {
		s.validateClient(p, fmt.Sprintf("modes[%d].clients", i), s.Modes[i].Clients)
	}
}

func (s clientsPart) validateClient(p *problems, path string, c *Clients) {
	if c == nil || c.Retry == nil {
		return
	}
	r := c.Retry
	path += ".retry"
	switch r.RetryAfter {
	case "", RetryAfterIgnore, RetryAfterHonor:
	default:
		p.add(path+".retry_after", "want %s or %s, got %q", RetryAfterIgnore, RetryAfterHonor, r.RetryAfter)
	}
	for i, ep := range r.Endpoints {
		if !slices.ContainsFunc(s.Endpoints, func(e Endpoint) bool { return e.Name == ep }) {
			p.add(fmt.Sprintf("%s.endpoints[%d]", path, i), "no endpoint %q (endpoints: %s)", ep, s.endpointList())
		}
	}
	lr, err := r.loadgen(0)
	if err == nil {
		err = lr.Validate()
	}
	var fe *loadgen.FieldError
	for _, e := range unjoin(err) {
		if errors.As(e, &fe) {
			p.add(path+"."+fe.Field, "%s", fe.Msg)
		} else {
			p.add(path, "%v", e)
		}
	}
}

// unjoin returns the errors joined in err (err itself when not joined).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// resolveClients makes every client duration absolute, given T.
func (s clientsPart) resolveClients() {
	t := s.Service.Timeout.Resolve(0)
	abs := func(c *Clients) {
		if c == nil || c.Retry == nil {
			return
		}
		c.Retry.Backoff = Abs(c.Retry.Backoff.Resolve(t))
		c.Retry.MaxBackoff = Abs(c.Retry.MaxBackoff.Resolve(t))
	}
	abs(s.Load.Clients)
	for i := range s.Modes {
		abs(s.Modes[i].Clients)
	}
}
