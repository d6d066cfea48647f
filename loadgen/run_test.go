package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func okServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(s.Close)
	return s
}

// TestRunExactCounts: short runs at known rates send exactly rate × duration
// requests per phase, all ok, valid, with the raw file readable by vegeta.
func TestRunExactCounts(t *testing.T) {
	srv := okServer(t)
	var rawA, rawB bytes.Buffer
	var mu sync.Mutex
	var phases []string
	cfg := Config{
		Targets: []Target{{Name: "a", URL: srv.URL + "/a", Rate: 100}, {Name: "b", URL: srv.URL + "/b", Rate: 50}},
		Phases:  []Phase{{"baseline", 600 * time.Millisecond}, {"fault", 400 * time.Millisecond}},
		Window:  200 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
		Raw:     map[string]io.Writer{"a": &rawA, "b": &rawB},
		OnPhase: func(p Phase, _ time.Time) { mu.Lock(); phases = append(phases, p.Name); mu.Unlock() },
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"a/baseline": 60, "a/fault": 40, "b/baseline": 30, "b/fault": 20}
	for _, ps := range rep.Phases {
		key := ps.Endpoint + "/" + ps.Phase
		if got := ps.Counts[ClassOK]; got != want[key] || ps.Counts.Total() != want[key] || ps.Expected != want[key] {
			t.Errorf("%s: ok=%d total=%d expected=%d, want %d", key, got, ps.Counts.Total(), ps.Expected, want[key])
		}
		if !ps.Valid {
			t.Logf("%s invalid (machine noise?): %v", key, ps.Reasons)
		}
	}
	if len(rep.Phases) != 4 {
		t.Errorf("phases = %d, want 4", len(rep.Phases))
	}
	if len(rep.Windows) != 10 {
		t.Errorf("windows = %d, want 5 per endpoint", len(rep.Windows))
	}
	for _, w := range rep.Windows {
		if w.Counts.Total() != w.Expected || w.Partial {
			t.Errorf("window %s/%d: total %d expected %d partial %v", w.Endpoint, w.Index, w.Counts.Total(), w.Expected, w.Partial)
		}
	}
	if strings.Join(phases, ",") != "baseline,fault" {
		t.Errorf("OnPhase calls = %v", phases)
	}
	for name, buf := range map[string]*bytes.Buffer{"a": &rawA, "b": &rawB} {
		dec := vegeta.NewDecoder(buf)
		n := 0
		for {
			var r vegeta.Result
			if err := dec.Decode(&r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("raw %s: decode: %v", name, err)
			}
			if r.Attack != name || r.Code != 200 || len(r.Body) != 0 {
				t.Errorf("raw %s: result %+v", name, r)
			}
			n++
		}
		if want := map[string]int{"a": 100, "b": 50}[name]; n != want {
			t.Errorf("raw %s: %d results, want %d", name, n, want)
		}
	}
}

func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}
