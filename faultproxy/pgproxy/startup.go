package pgproxy

import (
	"errors"
	"io"
	"os"
	"time"
)

// startupMode is what a connection's startup packet asks for.
type startupMode int

const (
	modeStartup startupMode = iota // a StartupMessage: a session
	modeCancel                     // a CancelRequest
	modeTLS                        // TLS (TLSPassthrough): relayed as plain TCP
)

// maxNegotiations bounds the SSLRequests and GSSENCRequests of one
// connection (a client sends one of each at most).
const maxNegotiations = 4

// tlsHandshake is the first byte of a TLS record carrying a handshake: a
// client with sslnegotiation=direct starts with it instead of an
// SSLRequest.
const tlsHandshake = 0x16

// startup reads the untyped packets a connection starts with: it answers
// an SSLRequest or a GSSENCRequest 'N' (no encryption; with
// TLSPassthrough an SSLRequest, or a direct TLS handshake, makes the
// connection a TLS one instead) until the StartupMessage or a
// CancelRequest, which it returns whole. Everything must come within the
// startup timeout. A malformed packet is a *protocolError; a client that
// closes first, io.EOF.
func (c *conn) startup() ([]byte, startupMode, error) {
	_ = c.client.SetReadDeadline(time.Now().Add(c.p.startupTimeout))
	defer c.client.SetReadDeadline(time.Time{})
	for i := 0; ; i++ {
		if i == maxNegotiations {
			return nil, 0, &protocolError{reasonNegotiation}
		}
		if err := c.crd.need(1); err != nil {
			return nil, 0, startupErr(err)
		}
		if c.p.tlsPassthrough && c.crd.peek(1)[0] == tlsHandshake {
			return nil, modeTLS, nil
		}
		if err := c.crd.need(8); err != nil {
			return nil, 0, startupErr(err)
		}
		h := c.crd.peek(8)
		l, code := be32(h[:4]), be32(h[4:8])
		if l < 8 || l > MaxStartupPacket {
			return nil, 0, &protocolError{reasonStartupLength}
		}
		if err := c.crd.need(int(l)); err != nil {
			return nil, 0, startupErr(err)
		}
		pkt := append([]byte(nil), c.crd.peek(int(l))...)
		c.crd.skip(int(l))
		switch {
		case code == codeSSLRequest && l == 8:
			if c.p.tlsPassthrough {
				return pkt, modeTLS, nil
			}
		case code == codeGSSENCRequest && l == 8:
		case code == codeCancelRequest && l >= 16 && l <= 12+256:
			return pkt, modeCancel, nil
		case code>>16 == protocolMajor3:
			return pkt, modeStartup, nil
		default:
			return nil, 0, &protocolError{reasonStartupCode}
		}
		if _, err := c.client.Write([]byte{'N'}); err != nil {
			return nil, 0, err
		}
	}
}

// startupErr names a startup's time-out as a malformed stream.
func startupErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &protocolError{reasonStartupTime}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return io.EOF
	}
	return err
}
