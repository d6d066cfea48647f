package service

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/payload"
)

func TestServiceDecodesJSON(t *testing.T) {
	const maxBody = 64 << 10
	doc := payload.JSON(32<<10, 1)
	var records []any
	if err := json.Unmarshal(doc, &records); err != nil {
		t.Fatal(err)
	}
	fixed := func(ctype, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tests := []struct {
		name, dep string
		status    int
		body      string // substring of the answer
		decodes   bool   // the decode histogram counts the call
	}{
		{"payload stub", startDep(t, DepConfig{Name: "A", Payload: 32 << 10, Seed: 1}), 200,
			`{"dependency":"a","items":` + itoa(len(records)) + `,"bytes":` + itoa(len(doc)) + `}`, true},
		{"+json type", fixed("application/problem+json; charset=utf-8", `{"x":1,"y":[2]}`), 200, `"items":2,"bytes":15`, true},
		{"text relayed", startDep(t, DepConfig{Name: "A", Size: 7}), 200, "xxxxxxx", false},
		{"invalid JSON", fixed("application/json", `[{"x":1},`), 502, "decoding its JSON body", true},
		{"over the cap", startDep(t, DepConfig{Name: "A", Payload: 2 * maxBody}), 502, ErrBodyTooLarge.Error(), false},
		{"text over the cap", startDep(t, DepConfig{Name: "A", Size: maxBody + 1}), 502, ErrBodyTooLarge.Error(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, url := startService(t, Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 2}, Timeout: 5 * time.Second,
				MaxBodyBytes: maxBody, Endpoints: TwoEndpoints(tc.dep, tc.dep)})
			r := get(t, testClient(t), url+"/a", nil)
			if r.status != tc.status || !strings.Contains(r.body, tc.body) {
				t.Fatalf("GET /a from %s: %d %q, want %d containing %q", tc.name, r.status, r.body, tc.status, tc.body)
			}
			if tc.decodes && len(r.body) > 200 {
				t.Errorf("GET /a from %s relayed %d bytes; want a small summary", tc.name, len(r.body))
			}
			if n := histCount(t, svc, "b"); n != 0 { // exported from the start
				t.Fatalf("decodes of /b counted = %v, want 0", n)
			}
			want := 0.0
			if tc.decodes {
				want = 1
			}
			if got := histCount(t, svc, "a"); got != want {
				t.Errorf("decodes of /a counted = %v, want %v", got, want)
			}
		})
	}
}

func histCount(t *testing.T, s *Service, dep string) float64 {
	t.Helper()
	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "bulkheadlab_dependency_decode_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == dep {
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{"application/json": true, "application/json; charset=utf-8": true,
		"application/vnd.x+json": true, "text/plain": false, "": false, "application/jsonx": false, "bad;;": false} {
		if got := isJSON(ct); got != want {
			t.Errorf("isJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
