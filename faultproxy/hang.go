package faultproxy

import "context"

// hang blocks, sending nothing, until the caller goes away (ctx done) or
// the proxy closes (stop closed). It reports whether it ended because of
// stop, in which case the caller aborts the connection.
func hang(ctx context.Context, stop <-chan struct{}) (stopped bool) {
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return true
	}
}
