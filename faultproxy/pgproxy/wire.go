package pgproxy

import (
	"encoding/binary"
	"io"
	"net"
)

// Framing limits of the protocol (v3) as the proxy reads it.
const (
	// MaxMessage caps a typed message's length field: a longer one is a
	// malformed stream, and closes its connection.
	MaxMessage = 1 << 30
	// MaxStartupPacket caps the untyped startup packet, as PostgreSQL does
	// (MAX_STARTUP_PACKET_LENGTH).
	MaxStartupPacket = 10000
	// MaxStatementText is how much of a statement's text is kept and
	// matched: a longer statement is matched on its first MaxStatementText
	// bytes.
	MaxStatementText = 64 << 10
)

// Startup codes: the second int32 of an untyped packet.
const (
	codeSSLRequest    = 80877103
	codeGSSENCRequest = 80877104
	codeCancelRequest = 80877102
	protocolMajor3    = 3 // StartupMessage: major version 3 in the high 16 bits
)

// Sizes of a connection's buffers: messages up to smallMessage bytes are
// read whole; longer ones are streamed through in pieces, except the
// prefix of a statement's text that match needs.
const (
	bufSize      = 8 << 10
	smallMessage = bufSize - 5
	// heldMax bounds the bytes of an extended-query batch held back until
	// its fault decision (at Sync or Flush): a batch that grows beyond is
	// decided on the statements seen so far.
	heldMax = 32 << 10
)

// Reasons a connection is closed for what a peer sent, as
// faultproxy_pg_protocol_errors_total labels them.
const (
	reasonBadLength     = "bad_length"          // a typed message's length below 4
	reasonTooLong       = "too_long"            // a typed message's length above MaxMessage
	reasonStartupLength = "bad_startup_length"  // a startup packet below 8 or above MaxStartupPacket bytes
	reasonStartupCode   = "bad_startup_code"    // not a StartupMessage, SSLRequest, GSSENCRequest nor CancelRequest
	reasonNegotiation   = "too_many_requests"   // more than maxNegotiations SSL/GSS requests
	reasonStartupTime   = "startup_timeout"     // no whole startup packet within the startup timeout
	reasonUpstream      = "upstream_bad_length" // the upstream's message length out of range
)

var protocolReasons = []string{reasonBadLength, reasonTooLong, reasonStartupLength, reasonStartupCode,
	reasonNegotiation, reasonStartupTime, reasonUpstream}

// protocolError ends a connection for a malformed stream; reason labels it.
type protocolError struct{ reason string }

func (e *protocolError) Error() string { return "pgproxy: malformed stream: " + e.reason }

// reader is a connection's buffered reader of whole messages and of
// pieces of long ones. beforeBlock, if set, runs before every read of the
// connection (which may block): the other direction's writer flushes
// there, so that nothing waits in a buffer while its peer waits for it.
// A reader is used by one goroutine.
type reader struct {
	conn        net.Conn
	buf         []byte
	r, w        int
	small       []byte // the buffer of bufSize it returns to after a long message
	beforeBlock func() error
}

func newReader(c net.Conn) *reader {
	b := make([]byte, bufSize)
	return &reader{conn: c, buf: b, small: b}
}

// buffered is the number of bytes read and not yet consumed.
func (rd *reader) buffered() int { return rd.w - rd.r }

// fill reads once more, after making room at the end of the buffer.
func (rd *reader) fill() error {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	} else if rd.w == len(rd.buf) {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.beforeBlock != nil {
		if err := rd.beforeBlock(); err != nil {
			return err
		}
	}
	for range 100 {
		n, err := rd.conn.Read(rd.buf[rd.w:])
		rd.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// need makes n bytes available contiguously at peek, growing the buffer
// beyond bufSize if n is larger (see shrink).
func (rd *reader) need(n int) error {
	if rd.w-rd.r >= n {
		return nil
	}
	if n > len(rd.buf) {
		b := make([]byte, n)
		rd.w = copy(b, rd.buf[rd.r:rd.w])
		rd.r, rd.buf = 0, b
	} else if rd.r+n > len(rd.buf) {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	for rd.w-rd.r < n {
		if err := rd.fill(); err != nil {
			return err
		}
	}
	return nil
}

// peek returns the next n bytes, which need made available; they are
// valid until the next read.
func (rd *reader) peek(n int) []byte { return rd.buf[rd.r : rd.r+n] }

// skip consumes n buffered bytes.
func (rd *reader) skip(n int) {
	rd.r += n
	if rd.r == rd.w && len(rd.buf) > bufSize {
		rd.shrink()
	}
}

// shrink returns to the small buffer once what is left fits in it.
func (rd *reader) shrink() {
	if len(rd.buf) == bufSize || rd.w-rd.r > bufSize {
		return
	}
	rd.w = copy(rd.small, rd.buf[rd.r:rd.w])
	rd.r, rd.buf = 0, rd.small
}

// piece returns up to max bytes of what is buffered, reading first if
// nothing is; the caller consumes them with skip.
func (rd *reader) piece(max int) ([]byte, error) {
	if rd.r == rd.w {
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
	n := min(rd.w-rd.r, max)
	return rd.buf[rd.r : rd.r+n], nil
}

// header reads a typed message's header: its type and the length of its
// body, checked against the framing limits.
func (rd *reader) header() (byte, int, error) {
	if err := rd.need(5); err != nil {
		return 0, 0, err
	}
	h := rd.peek(5)
	typ, l := h[0], binary.BigEndian.Uint32(h[1:5])
	switch {
	case l < 4:
		return 0, 0, &protocolError{reasonBadLength}
	case l > MaxMessage:
		return 0, 0, &protocolError{reasonTooLong}
	}
	return typ, int(l) - 4, nil
}

// cstring splits b at its first NUL: the string before it and the rest
// after it; ok is false when b has no NUL.
func cstring(b []byte) (s, rest []byte, ok bool) {
	for i, c := range b {
		if c == 0 {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// appendErrorResponse appends an ErrorResponse of severity ERROR with
// code and message, as the server words its own.
func appendErrorResponse(b []byte, code, message string) []byte {
	start := len(b)
	b = append(b, 'E', 0, 0, 0, 0)
	for _, f := range []struct {
		typ byte
		val string
	}{{'S', "ERROR"}, {'V', "ERROR"}, {'C', code}, {'M', message}} {
		b = append(b, f.typ)
		b = append(b, f.val...)
		b = append(b, 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b[start+1:], uint32(len(b)-start-1))
	return b
}

// appendReadyForQuery appends a ReadyForQuery with a transaction status
// ('I', 'T' or 'E').
func appendReadyForQuery(b []byte, status byte) []byte {
	return append(b, 'Z', 0, 0, 0, 5, status)
}
