package tcpproxy

import "math/rand/v2"

// timeout: the stream's data is dropped (as in Toxiproxy), and the
// connection is closed Timeout after the fault applies to it (when it
// opened, or when the set that has the fault was put); zero: never, until
// a set without it is put.

func init() {
	kinds[TypeTimeout] = kind{
		fields:   []string{"timeout"},
		validate: func(Fault, string) error { return nil },
		stage:    func(Fault, *rand.Rand) stage { return timeoutStage{} },
	}
}

type timeoutStage struct{}

func (timeoutStage) pass(p *pipe, b []byte, next *link) error {
	p.c.noteDropped(len(b))
	return nil
}
