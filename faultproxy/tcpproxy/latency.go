package tcpproxy

import (
	"math/rand/v2"
	"time"
)

// latency: each chunk of the stream is written Latency ± Jitter (uniform)
// after it was read, and never before an earlier chunk. The reader goes on
// reading while chunks wait (they wait in the pipe's delay line, see
// delayLine), so the delays of a pipelining client's requests overlap.
// Toxiproxy's latency toxic, with durations.

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

// pass, on the reader, hands b to the delay line, which calls pass again
// on its writer, in order: there it waits until b is due, from when it was
// read (or, behind another latency fault, from when that one let it go).
func (s *latencyStage) pass(p *pipe, b []byte, next *link) error {
	if !p.inLine {
		return p.delayLine().push(p, b, s, next)
	}
	at := p.readAt.Add(s.delay())
	if err := p.sleepUntil(at); err != nil {
		return err
	}
	p.c.noteDelay(time.Since(p.readAt))
	p.readAt = at
	return next.write(p, b)
}
