package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/fields"
	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// typeCases are, by fault type, a valid fault of the type firing on every
// request and, for a type with parameters, an invalid one with the field
// its error names. A new type needs its case here.
var typeCases = map[string]struct {
	valid, invalid Fault
	field          string
	status         int // the caller's answer to valid, 0 for none
}{
	TypeLatency: {Fault{Type: TypeLatency, Percent: 100, Latency: time.Millisecond},
		Fault{Type: TypeLatency, Percent: 100, Latency: -1}, "fault.latency", 200},
	TypeError: {Fault{Type: TypeError, Percent: 100, Status: 502, Body: "down"},
		Fault{Type: TypeError, Percent: 100, Status: 99}, "fault.status", 502},
	TypeAbort: {valid: Fault{Type: TypeAbort, Percent: 100}},
	TypeHang:  {valid: Fault{Type: TypeHang, Percent: 100}},
	TypeCapacity: {Fault{Type: TypeCapacity, Percent: 100, Capacity: 2},
		Fault{Type: TypeCapacity, Percent: 100}, "fault.capacity", 200},
	TypePayload: {Fault{Type: TypePayload, Percent: 100, Size: 64},
		Fault{Type: TypePayload, Percent: 100, Size: 1}, "fault.size", 200},
}

// TestFaultTypesComplete: every registered type is found by its name,
// takes only Fault fields, validates its own fields and rejects the
// others', enters the decision as its role says, and answers on both
// planes if it is terminal. A type added without one of them fails here.
func TestFaultTypesComplete(t *testing.T) {
	var paramNames []string
	for _, p := range faultParams {
		paramNames = append(paramNames, p.name)
	}
	seen := map[string]bool{}
	for _, ft := range faultTypes {
		name := ft.name()
		if name == "" || seen[name] || lookupType(name) != ft {
			t.Errorf("type %T: name %q empty, repeated or not found", ft, name)
		}
		seen[name] = true
		for _, p := range ft.params() {
			if !slices.Contains(paramNames, p) {
				t.Errorf("type %s takes %q, which is no Fault field (%v)", name, p, paramNames)
			}
		}
		tc, ok := typeCases[name]
		if !ok {
			t.Errorf("type %s has no case in typeCases", name)
			continue
		}
		if err := tc.valid.Validate(); err != nil {
			t.Errorf("type %s: valid fault %+v: %v", name, tc.valid, err)
		}
		checkValidation(t, ft, tc.valid, tc.invalid, tc.field)
		checkDecision(t, ft, tc.valid)
		_, answers := ft.(answerer)
		if (ft.role() == roleTerminal) != answers {
			t.Errorf("type %s: role %d, answerer %v: a terminal type, and only one, answers", name, ft.role(), answers)
		}
	}
	for _, p := range paramNames {
		if paramOwners(p) == "" {
			t.Errorf("Fault field %q is taken by no type", p)
		}
	}
}

// checkValidation: the invalid fault fails naming its field, and every
// field of another type fails naming itself.
func checkValidation(t *testing.T, ft faultType, valid, invalid Fault, field string) {
	t.Helper()
	if field != "" {
		var fe *FieldError
		if err := invalid.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("type %s: invalid fault %+v: error %v, want one naming %s", ft.name(), invalid, err, field)
		}
	} else if len(ft.params()) > 0 {
		t.Errorf("type %s takes %v but has no invalid case", ft.name(), ft.params())
	}
	var full Fault
	fields.Fill(&full, nil)
	for _, p := range faultParams {
		if slices.Contains(ft.params(), p.name) {
			continue
		}
		f := valid
		v := reflect.ValueOf(&f).Elem().Field(p.index)
		v.Set(reflect.ValueOf(full).Field(p.index))
		var fe *FieldError
		if err := f.Validate(); !errors.As(err, &fe) || fe.Field != "fault."+p.name {
			t.Errorf("type %s with %s set: error %v, want one naming fault.%s", ft.name(), p.name, err, p.name)
		}
	}
}

// checkDecision: a fault of the type that fires enters the decision as its
// role says.
func checkDecision(t *testing.T, ft faultType, f Fault) {
	t.Helper()
	d := newFaultSet([]Fault{f}).decide(1, 1)
	var ok bool
	switch ft.role() {
	case roleTerminal:
		ok = d.Terminal == 0 && d.TerminalType == ft.name() && d.Latencies == 0 && !d.Capacity
	case roleDelay:
		ok = d.Latencies == 1 && d.Delay > 0 && d.Terminal < 0 && !d.Capacity
	case roleCapacity:
		ok = d.Capacity && d.Latencies == 0 && d.Terminal < 0
	}
	if !ok {
		t.Errorf("type %s (role %d): decision %+v", ft.name(), ft.role(), d)
	}
}

// TestFaultParamsAreFaultsFields: faultParams are Fault's fields but Type
// and Percent, each named as faultWire's JSON does, and each sees its own
// field set and no other.
func TestFaultParamsAreFaultsFields(t *testing.T) {
	names := fields.Names(Fault{})
	if len(faultParams) != len(names)-2 {
		t.Fatalf("faultParams %v, Fault's fields %v", faultParams, names)
	}
	if m := fields.Missing(Fault{}, faultWire{}); len(m) > 0 {
		t.Errorf("faultWire lacks %v", m)
	}
	var full Fault
	fields.Fill(&full, nil)
	for _, p := range faultParams {
		var f Fault
		reflect.ValueOf(&f).Elem().Field(p.index).Set(reflect.ValueOf(full).Field(p.index))
		for _, q := range faultParams {
			if got := q.set(&f); got != (p == q) {
				t.Errorf("with only %s set, %s.set = %v", p.name, q.name, got)
			}
		}
		sf, _ := reflect.TypeFor[faultWire]().FieldByName(names[p.index])
		if !strings.HasPrefix(sf.Tag.Get("json"), p.name+",") {
			t.Errorf("param %s: faultWire.%s has tag %q", p.name, names[p.index], sf.Tag)
		}
	}
	if (faultParam{name: "headers", index: slices.Index(names, "Headers")}).set(&Fault{Headers: map[string]string{}}) {
		t.Error("an empty header map counts as set")
	}
}

// TestWireCarriesEveryField: a Fault survives its JSON form field by
// field, so that a field added to Fault and not to faultWire, MarshalJSON
// or the decoding fails here (spec.Fault → Fault is held by the spec's
// shape test).
func TestWireCarriesEveryField(t *testing.T) {
	var f Fault
	fields.Fill(&f, nil)
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var w faultWire
	if err := strictDecode(bytes.NewReader(b), &w, "fault"); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	g, err := w.fault("fault")
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if bad := fields.Carried(f, g, nil); len(bad) > 0 {
		t.Errorf("the JSON form %s does not carry: %v", b, bad)
	}
}

// TestEveryTypeActsOnBothPlanes: a fault of every type that fires on a
// request is injected on the net/http plane and on the raw one: counted
// as injected, the upstream called only if the type does not answer in its
// place, the caller answered with the type's status (or not at all), and
// the request's ledger entry naming the outcome.
func TestEveryTypeActsOnBothPlanes(t *testing.T) {
	for _, ft := range faultTypes {
		for _, plane := range []string{"net-http", "raw"} {
			t.Run(ft.name()+"/"+plane, func(t *testing.T) { actsOnPlane(t, ft, plane == "net-http") })
		}
	}
}

func actsOnPlane(t *testing.T, ft faultType, netHTTP bool) {
	if !netHTTP && !rawSupported {
		t.Skip("no raw data plane here")
	}
	tc := typeCases[ft.name()]
	wantCalls, wantOutcome := int64(1), "forwarded"
	if ft.role() == roleTerminal {
		wantCalls, wantOutcome = 0, ft.name()
	}
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.WriteString(w, "upstream")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var ledger bytes.Buffer
	cfg := Config{Upstream: u, Seed: 1, Ledger: NewLedger(&ledger, 0), ErrorLog: log.New(io.Discard, "", 0)}
	if netHTTP {
		cfg.Transport = NewTransport() // served by net/http
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults([]Fault{tc.valid}); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, raw := srv.data.(*rawServer); raw == netHTTP {
		t.Fatalf("data plane served by %T", srv.data)
	}
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	testkit.WaitFor(t, 10*time.Second, ft.name()+" injected", func() bool { return val(p.m.injected[ft.name()]) == 1 })
	testkit.WaitFor(t, 10*time.Second, "the upstream's calls", func() bool { return calls.Load() == wantCalls })
	if tc.status != 0 {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("answer %v, %v; want status %d", resp, err, tc.status)
		}
	}
	conn.Close() // ends a hang
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := cfg.Ledger.Close(); err != nil {
		t.Fatal(err)
	}
	var e LedgerEntry
	if err := json.Unmarshal(ledger.Bytes(), &e); err != nil || e.Outcome != wantOutcome || !strings.Contains(e.Decision, ft.name()) {
		t.Errorf("ledger %q (%v): want one entry, outcome %s, decision naming %s", ledger.Bytes(), err, wantOutcome, ft.name())
	}
}
