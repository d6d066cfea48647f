// Package mgc measures a server's concurrency from outside, for the tests
// of servers of finite capacity (the dependency stub and the proxy's
// capacity fault): n requests sent at once, and the groups their answers
// come back in. A server of capacity C and service time S answers n ≥ C
// requests at once in groups of C, the k-th group no earlier than k·S.
package mgc

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// Burst calls get n times at once and returns how long after their common
// start each call had returned, sorted, with the calls' errors joined. A
// first, untimed round opens the connections, so that the timed one does
// not dial. get must be safe for concurrent use.
func Burst(n int, get func() error) ([]time.Duration, error) {
	round := func() ([]time.Duration, error) {
		start := make(chan struct{})
		var t0 time.Time
		out := make([]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				err := get()
				out[i], errs[i] = time.Since(t0), err
			})
		}
		t0 = time.Now()
		close(start)
		wg.Wait()
		slices.Sort(out)
		return out, errors.Join(errs...)
	}
	if _, err := round(); err != nil {
		return nil, err
	}
	return round()
}

// Groups splits sorted answer times into groups, starting a new group at
// every gap of at least half a service time, and returns their sizes: [4 4]
// for 8 requests at once to a server of capacity 4 (one service time, then
// two), [8] to one of unlimited capacity.
func Groups(sorted []time.Duration, service time.Duration) []int {
	var out []int
	for i, d := range sorted {
		if i == 0 || d-sorted[i-1] >= service/2 {
			out = append(out, 0)
		}
		out[len(out)-1]++
	}
	return out
}

// Early returns the index of the first sorted answer that came before what
// a server serving perGroup at once guarantees (answer i no earlier than
// (i/perGroup + 1) service times), and that floor; -1 when none did.
func Early(sorted []time.Duration, perGroup int, service time.Duration) (int, time.Duration) {
	for i, d := range sorted {
		if floor := time.Duration(i/perGroup+1) * service; d < floor {
			return i, floor
		}
	}
	return -1, 0
}
