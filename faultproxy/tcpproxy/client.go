package tcpproxy

import (
	"context"
	"net/http"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/control"
)

// Put replaces the faults of the TCP proxy whose control API is at base
// ("http://host:port" or "host:port") with fs, through PUT /faults; a nil
// hc means http.DefaultClient. A 400's message is in the error, which then
// wraps ErrInvalidFault.
func Put(ctx context.Context, hc *http.Client, base string, fs []Fault) error {
	return control.Put(ctx, hc, base, fs, "tcpproxy control", ErrInvalidFault)
}
