package runner

import (
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func TestQuietSpan(t *testing.T) {
	m := &rundata.RunMeta{Timeout: 250 * time.Millisecond, Pools: []rundata.PoolInfo{{MaxWait: 100 * time.Millisecond}, {MaxWait: 300 * time.Millisecond}}}
	if got, want := quietSpan(m, 250*time.Millisecond), 1050*time.Millisecond; got != want {
		t.Errorf("quiet span %s, want T + the longest wait + two samples = %s", got, want)
	}
	m.Timeout = 30 * time.Second
	if got := quietSpan(m, 250*time.Millisecond); got != maxQuietSpan {
		t.Errorf("quiet span %s with T = 30 s, want the bound %s", got, maxQuietSpan)
	}
}
