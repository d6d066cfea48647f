package faultproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/payload"
)

// TestPayloadFault: on either data plane, a payload fault answers 200 with
// a JSON document of about its size, without calling the upstream, after
// the set's latency; a request it does not fire on is forwarded; the same
// size gives the same bytes.
func TestPayloadFault(t *testing.T) {
	const size = 64 << 10
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			e := newPlaneEnv(t, pl.raw, pl.opt)
			e.set(t, Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 20 * time.Millisecond}},
				Fault{Type: TypePayload, Percent: 100, Params: Payload{Size: size}})
			start := time.Now()
			status, body, h, err := e.get(context.Background(), "/", "")
			var doc []map[string]any
			switch {
			case err != nil || status != http.StatusOK:
				t.Fatalf("GET with a payload fault: %d %v, want 200", status, err)
			case h.Get("Content-Type") != payload.ContentType:
				t.Errorf("Content-Type %q, want %q", h.Get("Content-Type"), payload.ContentType)
			case len(body) > size || len(body) < size-160 || json.Unmarshal([]byte(body), &doc) != nil:
				t.Errorf("body of %d bytes, want a JSON array of objects of about %d", len(body), size)
			case body != string(payload.JSON(size, payloadSeed)):
				t.Errorf("body differs from payload.JSON(%d, payloadSeed)", size)
			case time.Since(start) < 20*time.Millisecond:
				t.Errorf("answered after %v, before the set's 20ms latency", time.Since(start))
			}
			if n := e.upCalls.Load(); n != 0 {
				t.Errorf("upstream called %d times, want 0: a payload fault replaces its answer", n)
			}
			if m := metricsText(t, e); !strings.Contains(m, `faultproxy_faults_injected_total{type="payload"} 1`+"\n") {
				t.Errorf("/metrics lacks one injected payload fault")
			}
			e.set(t, Fault{Type: TypePayload, Percent: 0, Params: Payload{Size: size}})
			if status, body, _, err := e.get(context.Background(), "/", ""); err != nil || status != http.StatusOK || len(body) >= size/2 {
				t.Errorf("GET with a payload fault of 0 %%: %d, %d bytes, %v; want the upstream's small answer", status, len(body), err)
			}
			if n := e.upCalls.Load(); n != 1 {
				t.Errorf("upstream called %d times, want 1", n)
			}
		})
	}
}
