package tcpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestParseFaultsToxiproxyUnitsAndNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
	}{
		{`{"type":"latency","latency":100,"jitter":"5ms"}`, Fault{Type: TypeLatency, Percent: 100, Stream: StreamDownstream, Latency: 100 * time.Millisecond, Jitter: 5 * time.Millisecond}},
		{`{"type":"bandwidth","rate":64,"stream":"upstream"}`, Fault{Type: TypeBandwidth, Percent: 100, Stream: StreamUpstream, BytesPerSecond: 64000}},
		{`{"type":"bandwidth","bytes_per_second":10}`, Fault{Type: TypeBandwidth, Percent: 100, Stream: StreamDownstream, BytesPerSecond: 10}},
		{`{"type":"reset_peer","timeout":250,"percent":5}`, Fault{Type: TypeReset, Percent: 5, Stream: StreamDownstream, Timeout: 250 * time.Millisecond}},
		{`{"type":"slicer","average_size":8,"size_variation":2,"delay":500}`, Fault{Type: TypeSlicer, Percent: 100, Stream: StreamDownstream, AverageSize: 8, SizeVariation: 2, Delay: 500 * time.Microsecond}},
		{`{"type":"down"}`, Fault{Type: TypeDown, Percent: 100}},
	} {
		fs, err := ParseFaults(strings.NewReader(`{"faults":[` + tc.in + `]}`))
		if err != nil || len(fs) != 1 || fs[0] != tc.want {
			t.Errorf("ParseFaults(%s) = %+v, %v; want %+v", tc.in, fs, err, tc.want)
			continue
		}
		// What the API answers reads back the same.
		b, _ := json.Marshal(fs[0])
		var back Fault
		if err := json.Unmarshal(b, &back); err != nil || back != tc.want {
			t.Errorf("%s: round trip through %s = %+v, %v", tc.in, b, back, err)
		}
	}
}

func TestParseFaultsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ in, field string }{
		{`{"type":"latency","latency":"10ms","jitter":"20ms"}`, "faults[0].jitter"},
		{`{"type":"latency","stream":"sideways"}`, "faults[0].stream"},
		{`{"type":"latency","bytes":3}`, "faults[0].bytes"},
		{`{"type":"bandwidth"}`, "faults[0].bytes_per_second"},
		{`{"type":"bandwidth","rate":1,"bytes_per_second":1}`, "faults[0].rate"},
		{`{"type":"limit_data","bytes":0}`, "faults[0].bytes"},
		{`{"type":"slicer","average_size":4,"size_variation":4}`, "faults[0].size_variation"},
		{`{"type":"timeout","timeout":"soon"}`, "faults[0].timeout"},
		{`{"type":"down","stream":"upstream"}`, "faults[0].stream"},
		{`{"type":"hang"}`, "faults[0].type"},
		{`{"type":"latency","percent":101}`, "faults[0].percent"},
		{`{"type":"latency","toxicity":0.5}`, "faults[0]"},
	} {
		_, err := ParseFaults(strings.NewReader(`{"faults":[` + tc.in + `]}`))
		var fe *faultproxy.FieldError
		if !errors.Is(err, ErrInvalidFault) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("ParseFaults(%s): %v; want an error naming %s", tc.in, err, tc.field)
		}
	}
}

func TestControlAPI(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, echo)
	base := "http://" + e.srv.ControlAddr()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := do("PUT", "/faults", `{"faults":[{"type":"slicer","average_size":0}]}`); code != 400 || !strings.Contains(body, "faults[0].average_size") {
		t.Errorf("PUT invalid: %d %s", code, body)
	}
	if code, body := do("PUT", "/faults", `{"faults":[{"type":"latency","latency":"5ms"}]}`); code != 200 || !strings.Contains(body, `"latency":"5ms"`) {
		t.Errorf("PUT: %d %s", code, body)
	}
	if code, body := do("GET", "/faults", ""); code != 200 || !strings.Contains(body, `"stream":"downstream"`) {
		t.Errorf("GET: %d %s", code, body)
	}
	if code, body := do("DELETE", "/faults", ""); code != 200 || strings.TrimSpace(body) != `{"faults":[]}` {
		t.Errorf("DELETE: %d %s", code, body)
	}
	if code, body := do("PUT", "/faults", string(bytes.Repeat([]byte(" "), faultproxy.MaxControlBody+1))); code != 413 {
		t.Errorf("PUT too large: %d %s", code, body)
	}
	if code, body := do("GET", "/metrics", ""); code != 200 || !strings.Contains(body, "faultproxy_tcp_open_connections") {
		t.Errorf("GET /metrics: %d", code)
	}
}

// TestLedgerRecordsEachConnection: one entry per connection with its
// decision, outcome and bytes.
func TestLedgerRecordsEachConnection(t *testing.T) {
	checkFDs(t)
	var buf bytes.Buffer
	ledger := faultproxy.NewLedger(&buf, 0)
	up := newUpstream(t, echo)
	p, err := New(Config{Upstream: up.addr(), Seed: 1, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{up: up, p: p, srv: srv}
	c := e.dial(t)
	exchange(t, c, []byte("hello"))
	e.put(t, `{"faults":[{"type":"reset","stream":"upstream"}]}`)
	_, _ = c.Write([]byte("x"))
	_, _ = c.Read(make([]byte, 1))
	testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Open() == 0 })
	_ = srv.Shutdown(t.Context())
	if err := ledger.Close(); err != nil {
		t.Fatal(err)
	}
	var got faultproxy.LedgerEntry
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("ledger %q: %v", buf.String(), err)
	}
	if got.Seq != 1 || got.Decision != "pass,reset" || got.Outcome != "reset" || got.BytesUp != 5 || got.BytesDown != 5 || got.DurationMS <= 0 {
		t.Errorf("ledger entry %+v; want seq 1, pass,reset, reset, 5 bytes each way", got)
	}
}
