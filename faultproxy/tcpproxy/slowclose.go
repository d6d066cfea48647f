package tcpproxy

import (
	"math/rand/v2"
	"time"
)

// slow_close: when the stream's source closes (its FIN), the close is
// passed on Delay later; data passes unchanged. Toxiproxy's slow_close.

func init() {
	kinds[TypeSlowClose] = kind{
		fields:   []string{"delay"},
		validate: func(Fault, string) error { return nil },
		stage:    func(f Fault, _ *rand.Rand) stage { return slowCloseStage{delay: f.Delay} },
	}
}

type slowCloseStage struct{ delay time.Duration }

func (s slowCloseStage) pass(p *pipe, b []byte, next *link) error { return next.write(p, b) }

func (s slowCloseStage) closeDelay() time.Duration { return s.delay }
