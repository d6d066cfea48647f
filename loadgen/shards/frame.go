package shards

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame types of the result stream.
const (
	frameBatch  = 'B'
	frameReport = 'R'
	frameError  = 'E'
)

// MaxFrame bounds a frame's payload.
const MaxFrame = 16 << 20

// ErrBadFrame is wrapped by the errors of a malformed result stream.
var ErrBadFrame = errors.New("shards: malformed frame")

// writeFrame writes one frame to w.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = typ
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	if _, err := w.Write(hdr[:1+n]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readFrame reads one frame from r into buf (grown as needed). It returns
// io.EOF at a clean end between frames.
func readFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	switch typ {
	case frameBatch, frameReport, frameError:
	default:
		return 0, nil, fmt.Errorf("%w: type %q", ErrBadFrame, typ)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: length: %v", ErrBadFrame, noEOF(err))
	}
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes is over %d", ErrBadFrame, n, MaxFrame)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("%w: payload: %v", ErrBadFrame, noEOF(err))
	}
	return typ, buf, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
