// Package backoff is the retry delay shared by the service's retry policy
// and the load generator's retrying clients: exponential, capped, with a
// seeded jitter so that a run can be repeated.
package backoff

import (
	"math/rand/v2"
	"sync"
	"time"
)

// New returns the delay before retry n (1-based): base doubling up to max
// (0: base), varied by ±jitter (0–1) of it with a generator seeded with
// seed (failsafe-go's own jitter draws from the global generator). The
// function is safe for concurrent use.
func New(base, max time.Duration, jitter float64, seed uint64) func(n int) time.Duration {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0x5e11ab1e))
	hi := max
	if hi == 0 {
		hi = base
	}
	return func(n int) time.Duration {
		d := base
		for i := 1; i < n && d < hi; i++ {
			d *= 2
		}
		d = min(d, hi)
		if jitter > 0 && d > 0 {
			mu.Lock()
			u := rng.Float64()
			mu.Unlock()
			d = time.Duration(float64(d) * (1 + jitter*(2*u-1)))
		}
		return d
	}
}
