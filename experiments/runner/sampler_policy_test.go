package runner

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// TestSamplerKeepsPolicyMetrics: the policy stacks' series pass the
// sampler's prefilter, so they land in metrics.jsonl.
func TestSamplerKeepsPolicyMetrics(t *testing.T) {
	for _, name := range []string{service.MetricBreakerState, service.MetricBreakerOpenedAt, service.MetricBreakerTransitions,
		service.MetricBreakerRejected, service.MetricRetries, service.MetricRetryBudgetRefuse, service.MetricLimiterLimit,
		service.MetricLimiterInflight, service.MetricLimiterRejected} {
		if !kept(name) {
			t.Errorf("the sampler drops %s", name)
		}
	}
}
