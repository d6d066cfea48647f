package runner

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// TestSamplerKeepsPolicyMetrics: the policy stacks' series pass the
// sampler's prefilter, so they land in metrics.jsonl.
func TestSamplerKeepsPolicyMetrics(t *testing.T) {
	for _, name := range []string{rundata.MetricBreakerState, rundata.MetricBreakerOpenedAt, rundata.MetricBreakerTransitions,
		rundata.MetricBreakerRejected, rundata.MetricRetries, rundata.MetricRetryBudgetRefuse, rundata.MetricLimiterLimit,
		rundata.MetricLimiterInflight, rundata.MetricLimiterRejected} {
		if !kept(name) {
			t.Errorf("the sampler drops %s", name)
		}
	}
}
