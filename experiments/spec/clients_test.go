package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

const clientsSpec = `name: t
service: {timeout: 200ms}
load:
  clients:
    retry: {attempts: 3, backoff: 0.1T}
modes:
  - shared
  - name: shared-retry
    pools: shared
    clients:
      retry:
        attempts: 4
        on: [rejected, circuit_open]
        backoff: 0.05T
        max_backoff: 1T
        jitter: 0.5
        retry_after: honor
        budget: {ratio: 0.1, reserve: 5}
        endpoints: [a]
  - name: shared-once
    pools: shared
    clients: {}
`

// TestClientsReachTheLoadGenerator: load.clients applies to every mode
// without its own; a mode's clients replace it (for the endpoints they
// name), durations relative to T resolved, each endpoint's jitter seeded
// from its run; {} is a client that does not retry.
func TestClientsReachTheLoadGenerator(t *testing.T) {
	s, err := Parse("t.yaml", []byte(clientsSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	retries := map[string]*loadgen.Retry{}
	seeds := map[uint64]bool{}
	for _, r := range p.Runs {
		for _, e := range r.Load.Endpoints {
			if r.Condition == CondSlow {
				retries[r.Mode+"/"+e.Name] = e.Retry
			}
			if e.Retry != nil {
				seeds[e.Retry.Seed] = true
			}
		}
	}
	if r := retries["shared/a"]; r == nil || r.Attempts != 3 || r.Backoff != 20*time.Millisecond || r.Budget != nil {
		t.Errorf("shared/a: %+v, want load.clients' retry (3 attempts, 0.1T = 20ms)", r)
	}
	r := retries["shared-retry/a"]
	if r == nil || r.Attempts != 4 || r.Backoff != 10*time.Millisecond || r.MaxBackoff != 200*time.Millisecond ||
		!r.HonorRetryAfter || r.Budget == nil || r.Budget.Ratio != 0.1 || r.Budget.Reserve != 5 ||
		len(r.On) != 2 || r.On[0] != loadgen.ClassRejected || r.On[1] != loadgen.ClassCircuitOpen {
		t.Errorf("shared-retry/a: %+v", r)
	}
	if retries["shared-retry/b"] != nil || retries["shared-once/a"] != nil {
		t.Errorf("retries where none were asked for: %+v, %+v", retries["shared-retry/b"], retries["shared-once/a"])
	}
	if len(seeds) < 8 {
		t.Errorf("%d distinct retry seeds; every run × endpoint should have its own", len(seeds))
	}
}

func TestClientsErrorsNameFieldAndLine(t *testing.T) {
	for _, tc := range []struct{ yaml, path string }{
		{"load: {clients: {retry: {attempts: 1}}}", "load.clients.retry.attempts"},
		{"load: {clients: {retry: {attempts: 3, on: [ok]}}}", "load.clients.retry.on[0]"},
		{"load: {clients: {retry: {attempts: 3, on: [rejectd]}}}", "load.clients.retry.on[0]"},
		{"load: {clients: {retry: {attempts: 3, retry_after: always}}}", "load.clients.retry.retry_after"},
		{"load: {clients: {retry: {attempts: 3, endpoints: [c]}}}", "load.clients.retry.endpoints[0]"},
		{"load: {clients: {retry: {attempts: 3, budget: {}}}}", "load.clients.retry.budget"},
		{"load: {clients: {retry: {attempts: 3, jitter: 3}}}", "load.clients.retry.jitter"},
		{"load: {clients: {retry: {attempts: 3, extra: 1}}}", "load.clients.retry"},
		{"modes: [{name: x, pools: shared, clients: {retry: {attempts: 3, budget: {ratio: 0.1, in_flight: 0.2}}}}]", "modes[0].clients.retry.budget"},
	} {
		_, err := Parse("s.yaml", []byte("name: t\n"+tc.yaml+"\n"))
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%s: error %v, want a SpecError", tc.yaml, err)
			continue
		}
		found := false
		for _, fe := range se.Errs {
			if strings.HasPrefix(fe.Path, tc.path) && fe.Line == 2 && fe.File == "s.yaml" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %v, want an error at s.yaml:2 naming %s", tc.yaml, err, tc.path)
		}
	}
}
