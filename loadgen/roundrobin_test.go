package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestRoundRobinOrder: the n-th call goes to urls[n mod len], with the
// base target's method, header and body.
func TestRoundRobinOrder(t *testing.T) {
	for _, tc := range []struct {
		urls []string
		n    int
		want []string
	}{
		{[]string{"u1"}, 3, []string{"u1", "u1", "u1"}},
		{[]string{"u1", "u2"}, 5, []string{"u1", "u2", "u1", "u2", "u1"}},
		{[]string{"u1", "u2", "u3", "u4"}, 6, []string{"u1", "u2", "u3", "u4", "u1", "u2"}},
	} {
		base := vegeta.Target{Method: "POST", Header: http.Header{"X": {"y"}}, Body: []byte("b")}
		tr := roundRobin(base, tc.urls)
		for i := 0; i < tc.n; i++ {
			var got vegeta.Target
			if err := tr(&got); err != nil {
				t.Fatal(err)
			}
			if got.URL != tc.want[i] || got.Method != "POST" || got.Header.Get("X") != "y" || string(got.Body) != "b" {
				t.Errorf("urls %v call %d: %+v, want URL %s and the base's method, header, body", tc.urls, i, got, tc.want[i])
			}
		}
	}
	if err := roundRobin(vegeta.Target{}, []string{"u"})(nil); !errors.Is(err, vegeta.ErrNilTarget) {
		t.Errorf("nil target: %v, want ErrNilTarget", err)
	}
}

// TestRoundRobinConcurrent: vegeta's workers call the targeter at once;
// every URL still gets exactly its share.
func TestRoundRobinConcurrent(t *testing.T) {
	urls := []string{"u1", "u2", "u3"}
	tr := roundRobin(vegeta.Target{}, urls)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := 0; i < 300; i++ {
				var tgt vegeta.Target
				_ = tr(&tgt)
				mu.Lock()
				got[tgt.URL]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, u := range urls {
		if got[u] != 800 {
			t.Errorf("%s got %d calls, want 800 (all: %v)", u, got[u], got)
		}
	}
}

// TestTargetURLsValidate: url and urls exclude each other, and every URL
// of urls must be http(s).
func TestTargetURLsValidate(t *testing.T) {
	for _, tc := range []struct {
		tgt   Target
		field string
	}{
		{Target{Name: "a", Rate: 1, URL: "http://x/a", URLs: []string{"http://y/a"}}, "targets[0].url"},
		{Target{Name: "a", Rate: 1, URLs: []string{"http://y/a", "ftp://z/a"}}, "targets[0].urls[1]"},
		{Target{Name: "a", Rate: 1, URLs: []string{"/a"}}, "targets[0].urls[0]"},
	} {
		cfg := Config{Targets: []Target{tc.tgt}, Phases: []Phase{{Name: "p", Duration: time.Second}}}
		_, err := cfg.validate()
		if !errors.Is(err, ErrInvalidConfig) || !containsField(err, tc.field) {
			t.Errorf("%+v: %v, want an ErrInvalidConfig naming %s", tc.tgt, err, tc.field)
		}
	}
	ok := Config{Targets: []Target{{Name: "a", Rate: 1, URLs: []string{"http://y/a", "https://z/a"}}}, Phases: []Phase{{Name: "p", Duration: time.Second}}}
	if _, err := ok.validate(); err != nil {
		t.Errorf("two http(s) URLs: %v", err)
	}
}

func containsField(err error, field string) bool {
	return err != nil && strings.Contains(err.Error(), field)
}

// TestRunRoundRobin: an open-model run of one endpoint over three servers
// sends every server exactly a third of the scheduled requests, and the
// endpoint's counts are the whole schedule.
func TestRunRoundRobin(t *testing.T) {
	var hits [3]atomic.Int64
	var urls []string
	for i := range hits {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		t.Cleanup(s.Close)
		urls = append(urls, s.URL+"/a")
	}
	cfg := Config{
		Targets: []Target{{Name: "a", URLs: urls, Rate: 150}},
		Phases:  []Phase{{Name: "baseline", Duration: 600 * time.Millisecond}},
		Window:  200 * time.Millisecond, Timeout: 2 * time.Second, LagThreshold: 50 * time.Millisecond,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 1 || rep.Phases[0].Counts[ClassOK] != 90 {
		t.Fatalf("phases %+v, want one with 90 ok", rep.Phases)
	}
	for i := range hits {
		if n := hits[i].Load(); n != 30 {
			t.Errorf("server %d got %d requests, want 30 (a third of 90)", i, n)
		}
	}
}
