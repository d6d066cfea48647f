package shards

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth/ctlauthtest"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// armBody is an arm request of cfg.
func armBody(t *testing.T, cfg loadgen.Config) string {
	t.Helper()
	b, err := loadgen.MarshalShard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(armRequest{Version: testVersion, Config: b})
	return string(out)
}

// TestAgentRefusesForeignClients: without the run's token, or under a
// foreign Host or Origin, or as text/plain, a client can neither arm,
// re-arm, disarm, start nor read a shard; no request reaches the target.
func TestAgentRefusesForeignClients(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	a := &Agent{Version: testVersion, Index: 0, Token: testToken}
	s := httptest.NewServer(a.Handler())
	defer s.Close()
	arm := ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, config(srv.URL))}
	start := ctlauthtest.Command{Method: "POST", Path: "/start", Body: fmt.Sprintf(`{"t0":%d}`, time.Now().UnixNano())}
	cmds := []ctlauthtest.Command{arm, start, {Method: "POST", Path: "/disarm", Body: "{}"},
		{Method: "GET", Path: "/hello"}, {Method: "GET", Path: "/clock"}}
	ctlauthtest.Refuses(t, s.URL, testToken, cmds)
	// Armed by the runner, re-armed and started by no one else.
	if code, body := ctlauthtest.Do(t, s.URL, testToken, arm); code != 200 {
		t.Fatalf("the runner's arm: %d %s", code, body)
	}
	ctlauthtest.Refuses(t, s.URL, testToken, cmds)
	if hits.Load() != 0 {
		t.Errorf("the target got %d requests from foreign clients", hits.Load())
	}
	if code, body := ctlauthtest.Do(t, s.URL, "", ctlauthtest.Command{Method: "GET", Path: "/healthz"}); code != 200 || strings.Contains(body, "version") {
		t.Errorf("GET /healthz without a token: %d %s; want 200 telling nothing but that it is up", code, body)
	}
}

// TestAgentArming: one arm at a time; a target not of the run and a load
// beyond the shard's limits are refused before anything is computed.
func TestAgentArming(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	other := target(t, 0, &hits)
	a := &Agent{Version: testVersion, Token: testToken, Targets: []string{srv.URL}}
	s := httptest.NewServer(a.Handler())
	defer s.Close()
	huge := config(srv.URL)
	huge.Targets = []loadgen.Target{{Name: "a", URL: srv.URL, Rate: 1e7}}
	huge.Phases = []loadgen.Phase{{Name: "day", Duration: 24 * time.Hour}}
	poisson := config(srv.URL)
	poisson.Arrivals.Process = loadgen.ArrivalsPoisson
	poisson.Targets = []loadgen.Target{{Name: "a", URL: srv.URL, Rate: 1e5}}
	poisson.Phases = []loadgen.Phase{{Name: "hour", Duration: time.Hour}}
	var many []loadgen.Target
	for i := range 1000 {
		many = append(many, loadgen.Target{Name: fmt.Sprint("t", i), URL: srv.URL, Rate: 1e4})
	}
	wide := config(srv.URL)
	wide.Targets, wide.Phases = many, []loadgen.Phase{{Name: "hour", Duration: time.Hour}}
	foreignHost := config(other.URL)
	metadata := config("http://169.254.169.254")
	for _, tc := range []struct {
		name string
		cmd  ctlauthtest.Command
		want int
		msg  string
	}{
		{"a target not of the run", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, foreignHost)}, 403, "not a target of this run"},
		{"the metadata address", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, metadata)}, 400, "loopback"},
		{"10 M/s for 24 h", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, huge)}, 413, "beyond a shard's"},
		{"Poisson 100 k/s for an hour", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, poisson)}, 413, "Poisson"},
		{"1,000 targets at 10 k/s for an hour", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, wide)}, 413, "beyond a shard's"},
		{"the run's", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, config(srv.URL))}, 200, "duration_ns"},
		{"again, armed", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, config(srv.URL))}, 409, "already armed"},
		{"disarm", ctlauthtest.Command{Method: "POST", Path: "/disarm", Body: "{}"}, 200, "false"},
		{"after the disarm", ctlauthtest.Command{Method: "POST", Path: "/arm", Body: armBody(t, config(srv.URL))}, 200, "duration_ns"},
	} {
		code, body := ctlauthtest.Do(t, s.URL, testToken, tc.cmd)
		if code != tc.want || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s; want %d with %q", tc.name, code, strings.TrimSpace(body), tc.want, tc.msg)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("arming sent %d requests", hits.Load())
	}
}

// TestFleetDisarmsAfterAFailedRelease: when one shard cannot be armed,
// the others are disarmed, so the next run arms them.
func TestFleetDisarmsAfterAFailedRelease(t *testing.T) {
	var hits atomic.Int64
	srv := target(t, 0, &hits)
	var broken atomic.Bool
	broken.Store(true)
	f := agents(t, 2, func(i int, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 1 && broken.Load() && r.URL.Path == "/arm" {
				http.Error(w, "broken", http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	cfg := config(srv.URL)
	cfg.Remote = f
	if _, err := loadgen.Run(t.Context(), cfg); err == nil {
		t.Fatal("a run with a shard that cannot be armed succeeded")
	}
	broken.Store(false)
	if _, err := loadgen.Run(t.Context(), cfg); err != nil {
		t.Fatalf("the next run: %v", err)
	}
}
