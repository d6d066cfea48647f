// Package loopback is the one policy every entry point of the harness
// applies to addresses: servers listen, and load, faults and proxies reach,
// only loopback addresses (127.0.0.0/8, ::1, localhost) unless the user
// passes --allow-remote.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/bulkheadlab/bulkheadlab/internal/redact"
)

// ErrRemote is wrapped by every refusal of a non-loopback address.
var ErrRemote = errors.New("not a loopback address")

// Host reports whether host (a name or an IP, without port) is loopback.
// The empty host — every interface — is not.
func Host(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses a listen address (host:port) beyond loopback unless
// allowRemote; flag names the flag in the message.
func CheckListen(flag, addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %q is not host:port: %v", flag, addr, err)
	}
	if !allowRemote && !Host(host) {
		what := host
		if host == "" {
			what = "every interface"
		}
		return fmt.Errorf("%s %s: %w (%s); listen on 127.0.0.1, or pass --allow-remote to accept connections from other machines",
			flag, addr, ErrRemote, what)
	}
	return nil
}

// CheckURL refuses a URL whose host is beyond loopback unless allowRemote.
func CheckURL(flag, raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %q is not a URL", flag, redact.Text(raw))
	}
	if !allowRemote && !Host(u.Hostname()) {
		return fmt.Errorf("%s %s: %w; pass --allow-remote to send traffic beyond this machine", flag, u.Redacted(), ErrRemote)
	}
	return nil
}
