package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// typeCase is, for one fault type, a valid fault of the type firing on
// every request and, for a type with parameters, an invalid one with the
// field its error names.
type typeCase struct {
	valid, invalid Fault
	field          string
	status         int // the caller's answer to valid, 0 for none
}

// typeCases are the cases by fault type. A new type adds its own (from
// an init of its test file); TestFaultTypesComplete fails without it.
var typeCases = map[string]typeCase{
	TypeLatency: {Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: time.Millisecond}},
		Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: -1}}, "fault.latency", 200},
	TypeError: {Fault{Type: TypeError, Percent: 100, Params: Reply{Status: 502, Body: "down"}},
		Fault{Type: TypeError, Percent: 100, Params: Reply{Status: 99}}, "fault.status", 502},
	TypeAbort: {valid: Fault{Type: TypeAbort, Percent: 100}},
	TypeHang:  {valid: Fault{Type: TypeHang, Percent: 100}},
	TypeCapacity: {Fault{Type: TypeCapacity, Percent: 100, Params: Capacity{Capacity: 2}},
		Fault{Type: TypeCapacity, Percent: 100}, "fault.capacity", 200},
	TypePayload: {Fault{Type: TypePayload, Percent: 100, Params: Payload{Size: 64}},
		Fault{Type: TypePayload, Percent: 100, Params: Payload{Size: 1}}, "fault.size", 200},
}

// TestFaultTypesComplete: every registered type is found by its name, has
// a parameter struct the registry can read, validates its own parameters
// and refuses the others', enters the decision as its role says, answers
// on both planes if it is terminal, delays if it has a delaying role, and
// says what it is. A type added without one of them fails here.
func TestFaultTypesComplete(t *testing.T) {
	for _, rt := range registry.list {
		name := rt.name()
		if lookupType(name) != rt || !slices.Contains(Types(), name) {
			t.Errorf("type %s: not found by its name", name)
		}
		tc, ok := typeCases[name]
		if !ok {
			t.Errorf("type %s has no case in typeCases", name)
			continue
		}
		if err := tc.valid.Validate(); err != nil {
			t.Errorf("type %s: valid fault %+v: %v", name, tc.valid, err)
		}
		checkValidation(t, rt, tc)
		checkDecision(t, rt, tc.valid)
		_, answers := rt.faultType.(answerer)
		if (rt.role() == roleTerminal) != answers {
			t.Errorf("type %s: role %d, answerer %v: a terminal type, and only one, answers", name, rt.role(), answers)
		}
		_, delays := rt.faultType.(delayer)
		if (rt.role() == roleDelay || rt.role() == roleCapacity) != delays {
			t.Errorf("type %s: role %d, delayer %v: a delaying type, and only one, has a delay", name, rt.role(), delays)
		}
		_, shapes := rt.faultType.(bodyShaper)
		if (rt.role() == roleShape) != shapes {
			t.Errorf("type %s: role %d, bodyShaper %v: a shaping type, and only one, shapes a body", name, rt.role(), shapes)
		}
		if d := tc.valid.Describe(); !strings.HasPrefix(d, name) || !strings.HasSuffix(d, " on 100 % of requests") {
			t.Errorf("type %s: described as %q, want its name first and its percent", name, d)
		}
		for pl := range rt.counterparts() {
			if pl != PlaneTCP && pl != PlanePostgres {
				t.Errorf("type %s: a counterpart on plane %q, which is none", name, pl)
			}
		}
		checkExample(t, rt)
	}
}

// checkValidation: the invalid fault fails naming its field; a parameter
// of another type fails naming itself, in JSON and in Go (another type's
// parameter struct).
func checkValidation(t *testing.T, rt *registered, tc typeCase) {
	t.Helper()
	name := rt.name()
	if tc.field != "" {
		var fe *FieldError
		if err := tc.invalid.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("type %s: invalid fault %+v: error %v, want one naming %s", name, tc.invalid, err, tc.field)
		}
	} else if len(rt.params) > 0 {
		t.Errorf("type %s takes %v but has no invalid case", name, rt.params)
	}
	valid, err := json.Marshal(tc.valid)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range registry.list {
		if other.ptype == nil {
			continue
		}
		v := reflect.New(other.ptype).Elem()
		fields.Fill(v.Addr().Interface(), nil)
		for _, p := range other.params {
			if _, own := rt.param(p.Name); own {
				continue
			}
			b, _ := json.Marshal(p.jsonValue(v))
			body := fmt.Sprintf(`{"faults":[%s,"%s":%s}]}`, valid[:len(valid)-1], p.Name, b)
			_, err := ParseFaults(strings.NewReader(body))
			if err == nil || !strings.HasPrefix(err.Error(), "faults[0]."+p.Name+": only valid for type ") {
				t.Errorf("type %s with %s in JSON: error %v, want one naming faults[0].%s", name, p.Name, err, p.Name)
			}
			g := tc.valid
			one := reflect.New(other.ptype).Elem()
			one.Field(p.index).Set(v.Field(p.index))
			g.Params = one.Interface()
			var fe *FieldError
			if err := g.Validate(); !errors.As(err, &fe) || fe.Field != "fault."+p.Name {
				t.Errorf("type %s with %T{%s}: error %v, want one naming fault.%s", name, g.Params, p.Name, err, p.Name)
			}
		}
	}
}

// checkExample: the type's example is a valid fault of it, and maps onto
// each other plane exactly where the type says it acts (Planes): there as
// a fault of a type, elsewhere as an error naming fault.type.
func checkExample(t *testing.T, rt *registered) {
	t.Helper()
	name := rt.name()
	ex, ok := Example(name)
	if err := ex.Validate(); !ok || ex.Type != name || err != nil {
		t.Errorf("type %s: example %+v (%v)", name, ex, err)
	}
	for _, pl := range []string{PlaneTCP, PlanePostgres} {
		w, err := ex.OnPlane(pl)
		var fe *FieldError
		switch acts := slices.Contains(Planes(name), pl); {
		case acts && (err != nil || w["type"] == nil || w["type"] == ""):
			t.Errorf("type %s on the %s plane: %v, %v; want a fault of a type there", name, pl, w, err)
		case !acts && (!errors.As(err, &fe) || fe.Field != "fault.type"):
			t.Errorf("type %s on the %s plane: %v, %v; want an error naming fault.type", name, pl, w, err)
		}
	}
	if _, err := ex.OnPlane(PlaneHTTP); err == nil {
		t.Errorf("type %s: OnPlane(http) maps a fault onto its own plane", name)
	}
}

// checkDecision: a fault of the type that fires enters the decision as its
// role says.
func checkDecision(t *testing.T, rt *registered, f Fault) {
	t.Helper()
	d := newFaultSet([]Fault{f}).decide(1, 1, allMatched)
	var ok bool
	switch rt.role() {
	case roleTerminal:
		ok = d.Terminal == 0 && d.TerminalType == rt.name() && d.Latencies == 0 && !d.Capacity
	case roleDelay:
		ok = d.Latencies == 1 && d.Delay > 0 && d.Terminal < 0 && !d.Capacity
	case roleCapacity:
		ok = d.Capacity && d.Latencies == 0 && d.Terminal < 0
	case roleShape:
		ok = d.Shaped == 1 && d.Shape == rt.name() && d.String() == rt.name() && d.Latencies == 0 && d.Terminal < 0 && !d.Capacity
	}
	if !ok {
		t.Errorf("type %s (role %d): decision %+v", rt.name(), rt.role(), d)
	}
}

// TestParamsAreTagged: every parameter struct's fields are parameters of a
// kind the JSON and a spec can write, named as the registry lists them,
// and one name is one kind across the types.
func TestParamsAreTagged(t *testing.T) {
	kinds := map[string]ParamKind{}
	for _, rt := range registry.list {
		if rt.ptype == nil {
			if len(rt.params) != 0 {
				t.Errorf("type %s: parameters %v without a struct", rt.name(), rt.params)
			}
			continue
		}
		if got, want := len(rt.params), rt.ptype.NumField(); got != want {
			t.Errorf("type %s: %d parameters of %d fields", rt.name(), got, want)
		}
		for _, p := range rt.params {
			if p.Kind == 0 || p.Name == "" {
				t.Errorf("type %s: parameter %+v", rt.name(), p)
			}
			if k, ok := kinds[p.Name]; ok && k != p.Kind {
				t.Errorf("parameter %s is a %s and a %s", p.Name, k, p.Kind)
			}
			kinds[p.Name] = p.Kind
			if p.Default != nil && reflect.TypeOf(p.Default) != p.typ {
				t.Errorf("type %s: parameter %s's default %v is a %T, not a %s", rt.name(), p.Name, p.Default, p.Default, p.typ)
			}
		}
	}
	if len(kinds) != len(AllParams()) {
		t.Errorf("AllParams %v, want the %d names of %v", AllParams(), len(kinds), kinds)
	}
	for _, bad := range []any{struct{ X int }{}, struct {
		X float64 `fault:"x"`
	}{}, struct {
		X string `fault:"x" default:"a"`
		Y int    `fault:"y" default:"a"`
	}{}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("parameter struct %T accepted", bad)
				}
			}()
			paramsOfStruct(reflect.TypeOf(bad))
		}()
	}
}

// TestWireCarriesEveryParam: every parameter of every type survives the
// JSON form, so that a parameter the encoding or the decoding drops fails
// here.
func TestWireCarriesEveryParam(t *testing.T) {
	for _, rt := range registry.list {
		if rt.ptype == nil {
			continue
		}
		v := reflect.New(rt.ptype)
		fields.Fill(v.Interface(), nil)
		f := Fault{Type: rt.name(), Percent: 50, Params: v.Elem().Interface()}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		g, foreign, err := decodeWire(b, "fault")
		if err != nil || foreign != "" {
			t.Fatalf("%s: %v (foreign %q)", b, err, foreign)
		}
		if bad := fields.Carried(f, g, nil); len(bad) > 0 {
			t.Errorf("the JSON form %s does not carry: %v", b, bad)
		}
	}
}

// TestNewFault: a fault built from values by name is the fault of the
// JSON with those values; a parameter of another type, or of none, is
// refused naming it.
func TestNewFault(t *testing.T) {
	f, err := NewFault(TypeLatency, 30, map[string]any{"latency": 225 * time.Millisecond, "jitter": time.Duration(0), "status": 0})
	want := Fault{Type: TypeLatency, Percent: 30, Params: Delay{Latency: 225 * time.Millisecond}}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("NewFault = %+v, %v; want %+v", f, err, want)
	}
	f, err = NewFault(TypeError, 100, map[string]any{"status": 502, "headers": map[string]string{"K": "V"}})
	if want := (Fault{Type: TypeError, Percent: 100, Params: Reply{Status: 502, Headers: map[string]string{"K": "V"}}}); err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("NewFault = %+v, %v; want %+v", f, err, want)
	}
	for _, tt := range []struct {
		typ    string
		values map[string]any
		want   string
	}{
		{TypeLatency, map[string]any{"status": 503}, "fault.status: only valid for type error"},
		{TypeAbort, map[string]any{"size": 10}, "fault.size: only valid for type payload"},
		{"teleport", map[string]any{"latency": time.Second}, "fault.latency: only valid for type latency or capacity"},
		{TypeLatency, map[string]any{"toxicity": 1}, "fault.toxicity: not a parameter of any fault type"},
		{TypeLatency, map[string]any{"latency": 5}, "fault.latency: want a duration, got int"},
		{TypePayload, map[string]any{"size": "1KiB"}, "fault.size: want a size in bytes, got string"},
	} {
		if _, err := NewFault(tt.typ, 100, tt.values); err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalidFault) {
			t.Errorf("NewFault(%s, %v) error %v, want %q", tt.typ, tt.values, err, tt.want)
		}
	}
}

// TestEveryTypeActsOnBothPlanes: a fault of every type that fires on a
// request is injected on the net/http plane and on the raw one: counted
// as injected, the upstream called only if the type does not answer in its
// place, the caller answered with the type's status (or not at all), and
// the request's ledger entry naming the outcome.
func TestEveryTypeActsOnBothPlanes(t *testing.T) {
	for _, ft := range registry.list {
		for _, plane := range []string{"net-http", "raw"} {
			t.Run(ft.name()+"/"+plane, func(t *testing.T) { actsOnPlane(t, ft, plane == "net-http") })
		}
	}
}

func actsOnPlane(t *testing.T, ft *registered, netHTTP bool) {
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
