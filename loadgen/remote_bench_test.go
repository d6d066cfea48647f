package loadgen

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkShardMerge is the runner's cost of a load sent by shards: every
// shard's batch of one window decoded, ordered by completion across the
// shards (the merge) and aggregated, at 10 000 results/s in all, 250 ms
// windows. ns/shard-window is the cost of one shard's batch of one window;
// results/s compares with BenchmarkAggregator (the same results straight
// into the aggregator: what one generator costs), in the same run.
func BenchmarkShardMerge(b *testing.B) {
	const rate, window = 10000.0, 250 * time.Millisecond
	for _, n := range []int{1, 4, 16, 100} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			a, next := synthFeed(rate/2, time.Hour)
			perWindow := int64(rate * window.Seconds())
			p := &plan{cfg: Config{Targets: []Target{{Name: "a"}, {Name: "b"}}}, lag: DefaultLagThreshold,
				spans: a.cfg.phases}
			// 40 windows of batches, encoded once; the loop replays them
			// with the watermarks moved on.
			const windows = 40
			batches := make([][][]byte, windows)
			var i int64
			for w := range windows {
				per := make([][]sample, n)
				for range perWindow {
					s := next(i)
					per[int(i)%n] = append(per[int(i)%n], s)
					i++
				}
				batches[w] = make([][]byte, n)
				for sh := range n {
					batches[w][sh] = appendBatch(nil, int64(w+1)*int64(window), per[sh])
				}
			}
			var encoded int
			for _, w := range batches {
				for _, bt := range w {
					encoded += len(bt)
				}
			}
			out := make(chan sample, 4*perWindow)
			b.ReportAllocs()
			b.ResetTimer()
			results := int64(0)
			for round := 0; round*windows < b.N; round++ {
				b.StopTimer()
				m := newMerger(n, 2, p)
				m.start(time.Now(), out)
				b.StartTimer()
				for w := range windows {
					if round*windows+w >= b.N {
						break
					}
					for sh := range n {
						if err := m.add(sh, batches[w][sh]); err != nil {
							b.Fatal(err)
						}
					}
					for len(out) > 0 {
						a.add(<-out)
						results++
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/shard-window")
			b.ReportMetric(float64(results)/b.Elapsed().Seconds(), "results/s")
			b.ReportMetric(float64(encoded)/float64(windows*perWindow), "B/result")
		})
	}
}
