package tcpproxy

import (
	"errors"
	"math/rand/v2"
	"time"
)

// reset: Timeout after the first data of the stream once the fault applies
// (zero: at once), the connection is reset: the client gets a TCP RST
// (SO_LINGER 0), the upstream connection is closed; the data is not
// forwarded. Toxiproxy's reset_peer (a name accepted for it).

// errReset ends a connection with a reset.
var errReset = errors.New("tcpproxy: reset fault")

func init() {
	kinds[TypeReset] = kind{
		fields:   []string{"timeout"},
		validate: func(Fault, string) error { return nil },
		stage:    func(f Fault, _ *rand.Rand) stage { return resetStage{after: f.Timeout} },
	}
}

type resetStage struct{ after time.Duration }

func (s resetStage) pass(p *pipe, b []byte, next *link) error {
	if err := p.sleepUntil(p.readAt.Add(s.after)); err != nil {
		return err
	}
	return errReset
}
