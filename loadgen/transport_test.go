package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnectionsAreReused: although vegeta reads no body, the attacker
// must keep its connections, not dial one per request.
func TestConnectionsAreReused(t *testing.T) {
	var conns atomic.Int64
	body := strings.Repeat("x", 2048) // bigger than any read-ahead buffer slack
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	const rate, dur = 200, time.Second
	rep, err := Run(context.Background(), Config{
		Targets: []Target{{Name: "a", URL: srv.URL, Rate: rate}},
		Phases:  []Phase{{Name: "p", Duration: dur}},
		Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := rep.Phases[0].Counts[ClassOK]
	if n := conns.Load(); n > sent/4 {
		t.Errorf("%d connections for %d requests: connections are not reused", n, sent)
	}
	t.Logf("%d connections for %d requests", conns.Load(), sent)
}
