package tcpproxy

import (
	"errors"
	"math/rand/v2"
)

// limit_data: the stream passes Bytes bytes from when the fault applies to
// the connection, then the connection is closed (FIN to both peers).
// Toxiproxy's limit_data.

// errLimit ends a connection whose limit_data fault ran out.
var errLimit = errors.New("tcpproxy: limit_data reached")

func init() {
	kinds[TypeLimitData] = kind{
		fields: []string{"bytes"},
		validate: func(f Fault, field string) error {
			if f.Bytes < 1 || f.Bytes > MaxLimitBytes {
				return fieldErr(field+".bytes", "want 1–%d, got %d", int64(MaxLimitBytes), f.Bytes)
			}
			return nil
		},
		stage: func(f Fault, _ *rand.Rand) stage { return &limitStage{left: f.Bytes} },
	}
}

type limitStage struct{ left int64 }

func (s *limitStage) pass(p *pipe, b []byte, next *link) error {
	if int64(len(b)) < s.left {
		s.left -= int64(len(b))
		return next.write(p, b)
	}
	b, s.left = b[:s.left], 0
	if err := next.write(p, b); err != nil {
		return err
	}
	return errLimit
}
