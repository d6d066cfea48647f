package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
)

const tcpSpec = `name: ext-tcp
external:
  targets:   {a: "http://127.0.0.1:8080/a", b: "http://127.0.0.1:8080/b"}
  upstreams: {A: "tcp://127.0.0.1:6379", B: "http://127.0.0.1:9002"}
  proxies:   {A: "127.0.0.1:7001", B: "127.0.0.1:7002"}
modes: [shared]
conditions:
  - {name: slow, dependency: A, faults: [{type: latency, latency: 200ms, jitter: 10ms}]}
  - {name: failing, dependency: A, faults: [{type: error, percent: 50}]}
  - {name: stuck, dependency: A, faults: [{type: hang}]}
  - {name: b-slow, dependency: B, faults: [{type: latency, latency: 200ms}]}
%s`

// TestTCPUpstreamPlan: a tcp:// upstream gets a TCP proxy, and its
// conditions' faults are mapped onto TCP faults: latency to latency on the
// answers, error to reset, hang to a timeout that never closes; an HTTP
// dependency beside it keeps its HTTP faults.
func TestTCPUpstreamPlan(t *testing.T) {
	s, err := Parse("tcp.yaml", []byte(strings.Replace(tcpSpec, "%s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]tcpproxy.Fault{
		"slow":    {{Type: tcpproxy.TypeLatency, Percent: 100, Stream: tcpproxy.StreamDownstream, Latency: 200 * time.Millisecond, Jitter: 10 * time.Millisecond}},
		"failing": {{Type: tcpproxy.TypeReset, Percent: 50, Stream: tcpproxy.StreamUpstream}},
		"stuck":   {{Type: tcpproxy.TypeTimeout, Percent: 100, Stream: tcpproxy.StreamBoth}},
		"b-slow":  nil,
	}
	seen := 0
	for _, r := range p.Runs {
		w, ok := want[r.Condition]
		if !ok || len(r.Faults) != 1 {
			continue
		}
		seen++
		got := r.Faults[0].TCP
		if len(got) != len(w) || (len(w) > 0 && got[0] != w[0]) {
			t.Errorf("condition %s: TCP faults %+v, want %+v", r.Condition, got, w)
		}
		if err := tcpproxy.ValidateFaults(got); err != nil {
			t.Errorf("condition %s: %v", r.Condition, err)
		}
		for _, c := range r.Components {
			if c.Proxy != nil && c.Proxy.Name == "A" && c.Proxy.Upstream.URL != "tcp://127.0.0.1:6379" {
				t.Errorf("proxy A's upstream %q", c.Proxy.Upstream.URL)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d conditions planned with faults", seen, len(want))
	}
}

// TestTCPUpstreamErrors: what the TCP plane cannot do is refused with the
// file, line and field.
func TestTCPUpstreamErrors(t *testing.T) {
	for _, tt := range []struct{ edit, want string }{
		{"  - {name: busy-a, dependency: A, faults: [{type: capacity, capacity: 2}]}\n",
			"tcp.yaml:12: conditions[4].faults[0].type: dependency A is reached over TCP"},
		{"  - {name: tail, dependency: A, faults: [{type: latency, latency: 10ms, jitter: 5ms, distribution: pareto}]}\n",
			"tcp.yaml:12: conditions[4].faults[0].distribution"},
	} {
		_, err := Parse("tcp.yaml", []byte(strings.Replace(tcpSpec, "%s", tt.edit, 1)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tt.edit), err, tt.want)
		}
	}
	base := strings.Replace(tcpSpec, "%s", "", 1)
	for _, tt := range []struct{ from, to, want string }{
		{"tcp://127.0.0.1:6379", "tcp://127.0.0.1", "tcp.yaml:4: external.upstreams.A: want tcp://host:port"},
		{"modes: [shared]", "modes: [shared]\ndependencies: {A: {protocol: udp}, B: {}}", "tcp.yaml:7: dependencies.A.protocol: want http, tcp or postgres"},
		{"modes: [shared]", "modes: [shared]\ndependencies: {A: {protocol: http}, B: {}}", "external.upstreams.A: \"tcp://127.0.0.1:6379\" is a TCP address"},
		{"modes: [shared]", "modes: [shared]\ndependencies: {A: {}, B: {protocol: tcp}}", "external.upstreams.B: dependencies.B.protocol is tcp: want host:port"},
	} {
		if _, err := Parse("tcp.yaml", []byte(strings.Replace(base, tt.from, tt.to, 1))); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s → %s: %v, want %q", tt.from, tt.to, err, tt.want)
		}
	}
	// The built-in dependencies speak HTTP.
	builtin := "name: b\ndependencies: {A: {protocol: tcp}, B: {}}\n"
	if _, err := Parse("b.yaml", []byte(builtin)); err == nil || !strings.Contains(err.Error(), "b.yaml:2: dependencies.A.protocol: tcp needs your own service") {
		t.Errorf("protocol: tcp without external: %v", err)
	}
}

// TestTCPProtocolField: protocol: tcp with a host:port upstream is a TCP
// dependency, its proxy's upstream tcp://host:port.
func TestTCPProtocolField(t *testing.T) {
	text := strings.Replace(strings.Replace(tcpSpec, "%s", "", 1), `"tcp://127.0.0.1:6379"`, `"127.0.0.1:6379"`, 1) +
		"dependencies: {A: {protocol: tcp}, B: {}}\n"
	s, err := Parse("tcp.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range p.Runs {
		for _, c := range r.Components {
			if c.Proxy != nil && c.Proxy.Name == "A" {
				found = true
				if c.Proxy.Upstream.URL != "tcp://127.0.0.1:6379" {
					t.Errorf("proxy A's upstream %q, want tcp://127.0.0.1:6379", c.Proxy.Upstream.URL)
				}
			}
		}
		if r.Condition == "slow" && (len(r.Faults) != 1 || len(r.Faults[0].TCP) != 1) {
			t.Errorf("slow: faults %+v, want one TCP fault", r.Faults)
		}
	}
	if !found {
		t.Error("no proxy of A in the plan")
	}
	if r := s.RemoteTargets(); len(r) != 0 {
		t.Errorf("RemoteTargets %v, want none (every address is loopback)", r)
	}
}
