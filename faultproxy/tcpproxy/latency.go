package tcpproxy

import (
	"math/rand/v2"
	"time"
)

// latency: each chunk of the stream is written Latency ± Jitter (uniform)
// after it was read. Toxiproxy's latency toxic, with durations.

func init() {
	kinds[TypeLatency] = kind{
		fields: []string{"latency", "jitter"},
		validate: func(f Fault, field string) error {
			if f.Jitter > f.Latency {
				return fieldErr(field+".jitter", "want at most latency (%v), got %v", f.Latency, f.Jitter)
			}
			return nil
		},
		stage: func(f Fault, r *rand.Rand) stage { return &latencyStage{latency: f.Latency, jitter: f.Jitter, r: r} },
	}
}

type latencyStage struct {
	latency, jitter time.Duration
	r               *rand.Rand
}

func (s *latencyStage) delay() time.Duration {
	d := s.latency
	if s.jitter > 0 {
		d += time.Duration(s.r.Int64N(2*int64(s.jitter)+1)) - s.jitter
	}
	return d
}

func (s *latencyStage) pass(p *pipe, b []byte, next *link) error {
	d := s.delay()
	at := p.readAt.Add(d)
	if err := p.sleepUntil(at); err != nil {
		return err
	}
	p.c.noteDelay(time.Since(p.readAt))
	return next.write(p, b)
}
