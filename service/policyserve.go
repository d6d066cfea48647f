package service

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// validatePolicies checks every stack against its endpoint and the layout;
// fields are "policies.<endpoint>.<field>".
func (c Config) validatePolicies() error {
	names := map[string]bool{}
	for _, e := range c.Endpoints {
		names[e.Name] = true
	}
	keys := make([]string, 0, len(c.Policies))
	for k := range c.Policies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !names[k] {
			return fieldErrorf("policies."+k, "no endpoint %q (endpoints: %s)", k, strings.Join(c.EndpointNames(), ", "))
		}
		if !c.Layout.Mode.pooled() {
			return fieldErrorf("policies."+k, "a policy stack's bulkhead stage is the layout's pool, and %s has none", c.Layout.Mode)
		}
		if err := c.Policies[k].Validate(c.Timeout, c.Layout.Mode); err != nil {
			return prefixField(err, func(f string) string { return "policies." + k + "." + f })
		}
		// The test defect routes every endpoint to one pool; failsafe-go's
		// bulkhead replaces an endpoint's own pool, which then is not its.
		if c.Layout.BrokenSharedBulkhead && c.Policies[k].Bulkhead == BulkheadFailsafe {
			return fieldErrorf("policies."+k+".bulkhead", "failsafe cannot be combined with the shared-semaphore test defect")
		}
		// failsafe-go's bulkhead replaces the endpoint's own pool: a pool
		// group's endpoints would each get a bulkhead of the group's size
		// instead of sharing one.
		if g := c.Layout.groupOf(k); g != "" && c.Policies[k].Bulkhead == BulkheadFailsafe {
			return fieldErrorf("policies."+k+".bulkhead", "failsafe replaces the endpoint's own pool, and %s shares pool group %q", k, g)
		}
		// The defects act on the project's Pool, which failsafe-go's
		// bulkhead replaces: they would silently do nothing.
		if len(c.Defects) > 0 && c.Policies[k].Bulkhead == BulkheadFailsafe {
			return fieldErrorf("policies."+k+".bulkhead", "failsafe cannot be combined with the test defects (%s): they act on the service's own pools, which failsafe-go's bulkhead replaces", defectNames(c.Defects))
		}
	}
	return nil
}

// buildStacks registers the pools and builds the endpoints' stacks. A pool
// that every endpoint drawing from it replaces by failsafe-go's bulkhead is
// not registered (it would export a pool nobody uses).
func (s *Service) buildStacks() {
	vecs := newPolicyVecs()
	vecs.register(s.registry)
	replaced := map[*Pool]bool{}
	s.stacks = map[string]*stack{}
	for _, e := range s.cfg.Endpoints {
		pc, ok := s.cfg.Policies[e.Name]
		if !ok {
			continue
		}
		pool := s.layout.Pool(e.Name)
		m := newPolicyMetrics(vecs, s.registry, e.Name, pc)
		name := e.Name
		var limit *Pool
		if pc.Limit > 0 {
			// Validate checked the size; a nested bulkhead has no queue.
			limit, _ = NewPool(rundata.LimitPoolName(name), PoolConfig{Size: pc.Limit})
			limit.racy = s.defects.racyCounter // TEST DEFECT, before any use
			s.registry.MustRegister(limit)
		}
		s.stacks[name] = newStack(pc, stackDeps{endpoint: name, pool: pool, limit: limit, dep: s.deps[name], timeout: s.cfg.Timeout,
			maxWait: s.cfg.Layout.MaxWait, maxBody: s.cfg.MaxBodyBytes, metrics: m, defects: s.defects,
			observe: func(res callResult) { s.metrics.observe(name, res) }})
		if m.failsafe != nil {
			s.registry.MustRegister(m.failsafe)
			replaced[pool] = true
		}
	}
	for _, p := range s.layout.Pools() {
		if !replaced[p] {
			s.registry.MustRegister(p)
		}
	}
}

// stackEndpoint serves an endpoint through its policy stack.
func (s *Service) stackEndpoint(name string, st *stack) http.Handler {
	inflight := s.metrics.inflight.WithLabelValues(name)
	retries := s.cfg.Policies[name].Retry != nil
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Inc()
		defer inflight.Dec()
		id := r.Header.Get(rundata.HeaderRequestID)
		if id == "" {
			id = s.idPrefix + "-" + strconv.FormatUint(s.nextID.Add(1), 10)
		}
		w.Header().Set(rundata.HeaderRequestID, id)
		var attempts int
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		ctx = context.WithValue(ctx, attemptsKey{}, &attempts)
		res, err := st.call(ctx)
		if retries {
			w.Header().Set(rundata.HeaderAttempts, strconv.Itoa(attempts))
		}
		if err == nil {
			writeResult(w, res)
			return
		}
		var df *depFailure
		if errors.As(err, &df) {
			writeResult(w, df.res)
			return
		}
		if st.retryAfter != "" {
			w.Header().Set(rundata.HeaderRetryAfter, st.retryAfter)
		}
		s.writeRefusal(w, name, err)
	})
}

type attemptsKey struct{}

// countAttempt counts one attempt of the call in ctx's request, if counted.
func countAttempt(ctx context.Context) {
	if n, ok := ctx.Value(attemptsKey{}).(*int); ok {
		*n++ // attempts are sequential: a retry starts after the previous attempt ended
	}
}

// writeRefusal maps a policy's refusal to 503 with the header naming it.
func (s *Service) writeRefusal(w http.ResponseWriter, endpoint string, err error) {
	switch failureOutcome(err) {
	case OutcomeCircuitOpen:
		w.Header().Set(rundata.HeaderCircuitOpen, endpoint)
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error(), Reason: "circuit-open"})
	case OutcomeLimited:
		w.Header().Set(rundata.HeaderConcurrencyLimit, "exceeded")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error(), Reason: "limited"})
	case OutcomeTimeout: // the deadline passed while waiting for a permit
		writeResult(w, callResult{outcome: outcomeTimeout, err: err})
	case OutcomeRejected:
		if errors.Is(err, ErrFull) || errors.Is(err, ErrWaitTimeout) {
			writeRejection(w, s.layout.Pool(endpoint).Name(), err)
			return
		}
		w.Header().Set(rundata.HeaderBulkheadReject, "full")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error(), Pool: endpoint, Reason: "full"})
	default: // cancelled: the client is gone; nobody reads this
		writeRejection(w, s.layout.Pool(endpoint).Name(), err)
	}
}
