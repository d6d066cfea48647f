package tcpproxy

import (
	"math/rand/v2"
	"time"
)

// slicer: each chunk is written in slices of AverageSize ± SizeVariation
// bytes (uniform), each followed by a pause of Delay. Toxiproxy's slicer,
// whose delay is in microseconds when given as a number.

func init() {
	kinds[TypeSlicer] = kind{
		fields: []string{"average_size", "size_variation", "delay"},
		validate: func(f Fault, field string) error {
			if f.AverageSize < 1 || f.AverageSize > MaxSliceSize {
				return fieldErr(field+".average_size", "want 1–%d, got %d", MaxSliceSize, f.AverageSize)
			}
			if f.SizeVariation < 0 || f.SizeVariation >= f.AverageSize {
				return fieldErr(field+".size_variation", "want 0 to average_size−1 (%d), got %d", f.AverageSize-1, f.SizeVariation)
			}
			return nil
		},
		stage: func(f Fault, r *rand.Rand) stage {
			return &slicerStage{avg: f.AverageSize, vary: f.SizeVariation, delay: f.Delay, r: r}
		},
	}
}

type slicerStage struct {
	avg, vary int
	delay     time.Duration
	r         *rand.Rand
}

func (s *slicerStage) pass(p *pipe, b []byte, next *link) error {
	for len(b) > 0 {
		n := s.avg
		if s.vary > 0 {
			n += s.r.IntN(2*s.vary+1) - s.vary
		}
		n = min(n, len(b))
		if err := next.write(p, b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if err := p.sleepUntil(time.Now().Add(s.delay)); err != nil {
			return err
		}
	}
	return nil
}
