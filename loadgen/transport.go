package loadgen

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// newTransport returns the HTTP transport of one attacker: vegeta's
// defaults (keep-alive, up to DefaultConnections idle connections per host,
// no cap on connections) but no proxy from the environment, so loopback
// targets are always reached directly.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: vegeta.DefaultConnections,
		IdleConnTimeout:     90 * time.Second,
	}
}

// cancelTransport aborts in-flight requests when stop ends, while keeping
// the http.Client's own timeout (and its "Client.Timeout" error text): the
// request context stays derived from the client's.
type cancelTransport struct {
	rt   http.RoundTripper
	stop context.Context
}

func (t *cancelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	unhook := context.AfterFunc(t.stop, cancel)
	release := func() { unhook(); cancel() }
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releaseBody releases the request's context once the body is closed.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
