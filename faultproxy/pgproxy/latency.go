package pgproxy

import "time"

// TypeLatency is the latency fault: the query's answer reaches the client
// no sooner than Latency ± Jitter (uniform, Jitter ≤ Latency) after the
// proxy received the query; the statement runs on the server at once.
// Fired latencies add up.
const TypeLatency = "latency"

func init() {
	register(TypeLatency, kind{
		fields: []string{"latency", "jitter"},
		validate: func(f Fault, field string) error {
			if f.Jitter > f.Latency {
				return fieldErr(field+".jitter", "want at most latency (%v), got %v", f.Latency, f.Jitter)
			}
			return nil
		},
		act: func(f *Fault, r *qrand, d *decision) {
			l := f.Latency
			if f.Jitter > 0 {
				l += time.Duration(r.pcg.Uint64()%uint64(2*f.Jitter+1)) - f.Jitter
			}
			d.delay += l
		},
	})
}
