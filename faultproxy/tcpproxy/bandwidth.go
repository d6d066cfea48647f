package tcpproxy

import (
	"math/rand/v2"
	"time"
)

// bandwidth: the stream carries at most BytesPerSecond, in writes of at
// most 20 ms worth of it. A stream idle longer than its schedule starts
// again at once (no credit is saved up). Toxiproxy's bandwidth toxic, in
// bytes per second (its rate, KB/s, is accepted too).

func init() {
	kinds[TypeBandwidth] = kind{
		fields: []string{"bytes_per_second"},
		validate: func(f Fault, field string) error {
			if f.BytesPerSecond < 1 || f.BytesPerSecond > MaxBytesPerSec {
				return fieldErr(field+".bytes_per_second", "want 1–%d, got %d", int64(MaxBytesPerSec), f.BytesPerSecond)
			}
			return nil
		},
		stage: func(f Fault, _ *rand.Rand) stage { return &bandwidthStage{rate: f.BytesPerSecond} },
	}
}

type bandwidthStage struct {
	rate int64
	next time.Time // when the stream may write again
}

func (s *bandwidthStage) pass(p *pipe, b []byte, next *link) error {
	piece := max(s.rate/50, 1)
	for len(b) > 0 {
		n := int(min(int64(len(b)), piece))
		if now := time.Now(); s.next.Before(now) {
			s.next = now
		}
		if err := p.sleepUntil(s.next); err != nil {
			return err
		}
		if err := next.write(p, b[:n]); err != nil {
			return err
		}
		s.next = s.next.Add(time.Duration(int64(n) * int64(time.Second) / s.rate))
		b = b[n:]
	}
	return nil
}
