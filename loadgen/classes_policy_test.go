package loadgen

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPolicyRefusalsHaveTheirClasses: the built-in rules tell a breaker's,
// an adaptive limiter's and a rate limiter's 503 from a bulkhead's, and a Counts without them encodes
// exactly as before they existed.
func TestPolicyRefusalsHaveTheirClasses(t *testing.T) {
	c, err := NewClassifier(DefaultRules())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header, value string
		want          Class
	}{{"X-Circuit-Open", "x", ClassCircuitOpen}, {"X-Concurrency-Limit", "x", ClassLimited}, {"X-Bulkhead-Reject", "x", ClassRejected},
		{"X-Bulkhead-Reject", "rate", ClassLimited}, {"X-Bulkhead-Reject", "heap", ClassRejected}} {
		h := http.Header{}
		h.Set(tc.header, tc.value)
		if got := c.Classify(503, h, "503 Service Unavailable"); got != tc.want {
			t.Errorf("503 with %s: %s: %v, want %v", tc.header, tc.value, got, tc.want)
		}
	}
	var counts Counts
	counts[ClassOK] = 3
	b, _ := json.Marshal(counts)
	if strings.Contains(string(b), "circuit_open") || strings.Contains(string(b), "limited") || !strings.Contains(string(b), `"other":0`) {
		t.Errorf("counts without policy classes encode as %s", b)
	}
	counts[ClassLimited] = 2
	var back Counts
	if b, _ = json.Marshal(counts); json.Unmarshal(b, &back) != nil || back != counts {
		t.Errorf("round trip of %s: %v", b, back)
	}
}
