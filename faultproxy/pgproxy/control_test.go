package pgproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fault
	}{
		{`{"type":"latency","latency":50,"jitter":"5ms","match":"pg_sleep|analytics"}`, Fault{Type: TypeLatency, Percent: 100, Latency: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, Match: "pg_sleep|analytics"}},
		{`{"type":"error","percent":10}`, Fault{Type: TypeError, Percent: 10, Code: DefaultCode, Message: DefaultMessage}},
		{`{"type":"error","code":"53300","message":"sorry, too many clients already"}`, Fault{Type: TypeError, Percent: 100, Code: "53300", Message: "sorry, too many clients already"}},
		{`{"type":"hang","match":"^UPDATE","percent":0.5}`, Fault{Type: TypeHang, Percent: 0.5, Match: "^UPDATE"}},
	} {
		fs, err := ParseFaults(strings.NewReader(`{"faults":[` + tc.in + `]}`))
		if err != nil || len(fs) != 1 || fs[0] != tc.want {
			t.Errorf("ParseFaults(%s) = %+v, %v; want %+v", tc.in, fs, err, tc.want)
			continue
		}
		b, _ := json.Marshal(fs[0]) // what the API answers reads back the same
		var back Fault
		if err := json.Unmarshal(b, &back); err != nil || back != tc.want {
			t.Errorf("%s: round trip through %s = %+v, %v", tc.in, b, back, err)
		}
	}
}

func TestParseFaultsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ in, field string }{
		{`{"type":"latency","latency":"10ms","jitter":"20ms"}`, "faults[0].jitter"},
		{`{"type":"latency","latency":"soon"}`, "faults[0].latency"},
		{`{"type":"error","latency":"10ms"}`, "faults[0].latency"},
		{`{"type":"hang","code":"57014"}`, "faults[0].code"},
		{`{"type":"latency","message":"x"}`, "faults[0].message"},
		{`{"type":"error","code":"5701"}`, "faults[0].code"},
		{`{"type":"error","code":"5701a"}`, "faults[0].code"},
		{`{"type":"error","message":"a\u0000b"}`, "faults[0].message"},
		{`{"type":"hang","match":"("}`, "faults[0].match"},
		{`{"type":"hang","match":"` + strings.Repeat("a", MaxMatchLen+1) + `"}`, "faults[0].match"},
		{`{"type":"reset"}`, "faults[0].type"},
		{`{"type":"hang","percent":101}`, "faults[0].percent"},
		{`{"type":"hang","stream":"both"}`, "faults[0]"},
	} {
		_, err := ParseFaults(strings.NewReader(`{"faults":[` + tc.in + `]}`))
		var fe *faultproxy.FieldError
		if !errors.Is(err, ErrInvalidFault) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("ParseFaults(%s): %v; want an error naming %s", tc.in, err, tc.field)
		}
	}
	if _, err := ParseFaults(strings.NewReader(`{"faults":[]} {}`)); !errors.Is(err, ErrInvalidFault) {
		t.Errorf("trailing data: %v; want an error", err)
	}
}

// TestControlAPI: the control API's routes, on a proxy whose upstream is
// never dialled.
func TestControlAPI(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, "127.0.0.1:1", Config{})
	base := "http://" + e.srv.ControlAddr()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", "/faults", `{"faults":[{"type":"hang","match":"("}]}`, 400, "faults[0].match"},
		{"PUT", "/faults", `{"faults":[{"type":"latency","latency":"5ms","match":"^SELECT"}]}`, 200, `"latency":"5ms"`},
		{"GET", "/faults", "", 200, `"match":"^SELECT"`},
		{"DELETE", "/faults", "", 200, `{"faults":[]}`},
		{"PUT", "/faults", string(bytes.Repeat([]byte(" "), faultproxy.MaxControlBody+1)), 413, "larger"},
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/metrics", "", 200, "faultproxy_inflight_requests"},
	} {
		if code, body := do(tc.method, tc.path, tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %.40s: %d %s; want %d with %s", tc.method, tc.path, tc.body, code, body, tc.code, tc.want)
		}
	}
}

// TestLedgerRecordsEachQuery: one entry per query with its decision, its
// delays and its outcome.
func TestLedgerRecordsEachQuery(t *testing.T) {
	checkFDs(t)
	pg := pgtest.Start(t)
	var buf bytes.Buffer
	ledger := faultproxy.NewLedger(&buf, 0)
	e := newEnv(t, pg.Addr, Config{Ledger: ledger},
		Fault{Type: TypeLatency, Percent: 100, Latency: 20 * time.Millisecond, Match: "slow"},
		Fault{Type: TypeError, Percent: 100, Match: "fail"})
	c := connect(t, e.srv.Addr(), simple)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sql := range []string{"SELECT 1", "SELECT 'slow'", "SELECT 'fail'"} {
		_, _ = c.Exec(ctx, sql)
	}
	_ = c.Close(ctx)
	testkit.WaitFor(t, 5*time.Second, "the connection to end", func() bool { return e.p.Open() == 0 })
	_ = e.srv.Shutdown(ctx)
	if err := ledger.Close(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	for i, want := range []struct {
		decision, outcome string
		delay             bool
	}{{"pass", outcomeForwarded, false}, {"latency", outcomeForwarded, true}, {"error", outcomeError, false}} {
		var got faultproxy.LedgerEntry
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("entry %d: %v in %q", i, err, buf.String())
		}
		if got.Seq != uint64(i+1) || got.Decision != want.decision || got.Outcome != want.outcome ||
			(got.DelayMS >= 20) != want.delay || got.DurationMS <= 0 {
			t.Errorf("entry %d: %+v; want seq %d, %s, %s, delayed %v", i, got, i+1, want.decision, want.outcome, want.delay)
		}
	}
}

// TestPut: Put sets faults through the control API; a refused set is an
// error wrapping ErrInvalidFault that names the field.
func TestPut(t *testing.T) {
	checkFDs(t)
	e := newEnv(t, "127.0.0.1:1", Config{})
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	want := []Fault{{Type: TypeHang, Percent: 20, Match: "^UPDATE"}}
	if err := Put(t.Context(), hc, e.srv.ControlAddr(), want); err != nil {
		t.Fatal(err)
	}
	if got := e.p.Faults(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("faults after Put %+v, want %+v", got, want)
	}
	err := Put(t.Context(), hc, "http://"+e.srv.ControlAddr(), []Fault{{Type: TypeError, Percent: 1, Code: "x"}})
	if !errors.Is(err, ErrInvalidFault) || !strings.Contains(err.Error(), "faults[0].code") {
		t.Errorf("Put of a bad code: %v; want ErrInvalidFault naming faults[0].code", err)
	}
	if err := Put(t.Context(), hc, e.srv.ControlAddr(), nil); err != nil || len(e.p.Faults()) != 0 {
		t.Errorf("Put(nil): %v, faults %+v; want none", err, e.p.Faults())
	}
}
