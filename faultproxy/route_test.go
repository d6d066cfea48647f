package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bulkheadlab/bulkheadlab/internal/testkit"
)

// TestParseRoute: a route expression is an RE2 on the request's path
// (without the query string), after an optional method in capitals and
// one space; what it matches and what it refuses.
func TestParseRoute(t *testing.T) {
	type req struct {
		method, target string
		want           bool
	}
	for _, tt := range []struct {
		expr string
		err  string
		reqs []req
	}{
		{expr: "^/reports/", reqs: []req{{"GET", "/reports/daily", true}, {"POST", "/reports/", true},
			{"GET", "/reports", false}, {"GET", "/api/reports/x", false}, {"GET", "/reports/x?a=b", true}}},
		{expr: "reports", reqs: []req{{"GET", "/items?q=reports", false}, {"GET", "/v1/reports", true}}},
		{expr: "^/items$", reqs: []req{{"GET", "/items?page=2", true}, {"GET", "/items/2", false}}},
		{expr: "GET ^/reports/", reqs: []req{{"GET", "/reports/a", true}, {"HEAD", "/reports/a", false}, {"get", "/reports/a", false}}},
		{expr: "GET|HEAD /export$", reqs: []req{{"HEAD", "/a/export", true}, {"GET", "/a/export?x", true}, {"PUT", "/a/export", false}}},
		{expr: "POST ", reqs: []req{{"POST", "/anything", true}, {"GET", "/anything", false}}},
		{expr: "M-SEARCH ^/", reqs: []req{{"M-SEARCH", "/", true}}},
		{expr: "%2F", reqs: []req{{"GET", "/a%2Fb", true}, {"GET", "/a/b", false}}}, // as sent: still escaped
		{expr: "^/p$", reqs: []req{{"GET", "http://host:8080/p?q", true}, {"GET", "http://host", false}}},
		{expr: "^/$", reqs: []req{{"GET", "http://host", true}, {"OPTIONS", "*", false}}},
		{expr: "", err: "empty"},
		{expr: "  ", err: "empty"},
		{expr: "(", err: "error parsing regexp"},
		{expr: "get /x", err: `"get" before the space: want a method in capitals`},
		{expr: "GET||POST /x", err: "want a method in capitals"},
		{expr: " /x", err: "want a method in capitals"},
		{expr: "GET /a b", err: "a request's path has no space"},
		{expr: "GET (", err: "error parsing regexp"},
	} {
		r, err := parseRoute(tt.expr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one with %q", tt.expr, err, tt.err)
			}
			if ValidateRoute(tt.expr) == nil {
				t.Errorf("%q: ValidateRoute accepts it", tt.expr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.expr, err)
			continue
		}
		for _, q := range tt.reqs {
			raw := reqLine{raw: true, method: []byte(q.method), target: []byte(q.target)}
			str := reqLine{smethod: q.method, starget: q.target}
			if got, gotS := raw.match(r), str.match(r); got != q.want || gotS != q.want {
				t.Errorf("%q on %s %s: %v (bytes), %v (string); want %v", tt.expr, q.method, q.target, got, gotS, q.want)
			}
		}
	}
	if err := ValidateRoute("^/" + strings.Repeat("a", MaxMatchLen)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a long route: %v, want too long", err)
	}
}

// TestMatchFault: a fault with a match acts on the requests of its route
// only, on the raw data plane and through ServeHTTP; the others reach the
// upstream as if it were not set.
func TestMatchFault(t *testing.T) {
	fs := []Fault{{Type: TypeError, Percent: 100, Params: Reply{Status: 503}, Match: "GET ^/reports/"}}
	cases := []struct {
		method, path string
		want         int
	}{
		{"GET", "/reports/daily", 503}, {"GET", "/reports/daily?from=1", 503}, {"POST", "/reports/daily", 200},
		{"GET", "/items/1", 200}, {"GET", "/items?q=/reports/", 200},
	}
	t.Run("raw", func(t *testing.T) {
		e := newEnv(t)
		e.set(t, fs...)
		for _, c := range cases {
			req, _ := http.NewRequest(c.method, e.dataURL+c.path, nil)
			resp, err := e.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
			}
		}
		if got := e.p.Faults(); len(got) != 1 || got[0].Match != fs[0].Match {
			t.Errorf("faults %+v, want the match kept", got)
		}
	})
	t.Run("net/http", func(t *testing.T) {
		u, _ := url.Parse("http://upstream.invalid")
		p, err := New(Config{Upstream: u, Seed: 1, Transport: memUpstream()})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetFaults(fs); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
			if w.Code != c.want {
				t.Errorf("%s %s: %d, want %d", c.method, c.path, w.Code, c.want)
			}
		}
	})
}

// TestMatchKeepsRolls: a fault with a match decides a request of its
// route exactly as the same fault without one decides it (each request's
// roll is its own, whichever routes the others took), and never fires on
// another route.
func TestMatchKeepsRolls(t *testing.T) {
	plain := newFaultSet([]Fault{{Type: TypeLatency, Percent: 30, Params: Delay{Latency: time.Millisecond}}, {Type: TypeError, Percent: 40}})
	matched := newFaultSet([]Fault{{Type: TypeLatency, Percent: 30, Params: Delay{Latency: time.Millisecond}, Match: "^/a"}, {Type: TypeError, Percent: 40, Match: "^/a"}})
	a, b := &reqLine{smethod: "GET", starget: "/a"}, &reqLine{smethod: "GET", starget: "/b"}
	fired := 0
	for seq := uint64(1); seq <= 2000; seq++ {
		if got, want := matched.decide(9, seq, matched.matched(a)), plain.decide(9, seq, allMatched); got != want {
			t.Fatalf("seq %d on /a: %+v, want %+v", seq, got, want)
		}
		if d := matched.decide(9, seq, matched.matched(b)); d.String() != "pass" {
			t.Fatalf("seq %d on /b: %s, want pass", seq, d)
		} else if plain.decide(9, seq, allMatched).String() != "pass" {
			fired++
		}
	}
	if fired < 500 {
		t.Errorf("the faults fired on %d of 2000 requests without a match; want about 1160", fired)
	}
}

// TestMatchControlAPI: the control API takes a fault's match, answers it
// back, and refuses a bad one naming faults[i].match; the TCP and
// PostgreSQL planes have no counterpart of a route.
func TestMatchControlAPI(t *testing.T) {
	for _, tt := range []struct{ body, err string }{
		{`{"faults":[{"type":"latency","latency":"5ms","match":"GET ^/reports/"}]}`, ""},
		{`{"faults":[{"type":"hang","match":"("}]}`, "faults[0].match: error parsing regexp"},
		{`{"faults":[{"type":"abort"},{"type":"hang","match":"get /x"}]}`, "faults[1].match: \"get\" before the space"},
		{`{"faults":[{"type":"hang","match":"GET /a b"}]}`, "faults[0].match: a request's path has no space"},
		{`{"faults":[{"type":"hang","match":7}]}`, "faults[0].match: want string"},
	} {
		fs, err := ParseFaults(strings.NewReader(tt.body))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalidFault) {
				t.Errorf("%s: %v, want an error with %q", tt.body, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		b, _ := fs[0].MarshalJSON()
		if want := `{"type":"latency","percent":100,"latency":"5ms","distribution":"uniform","match":"GET ^/reports/"}`; string(b) != want {
			t.Errorf("%s: encoded %s, want %s", tt.body, b, want)
		}
		for _, plane := range []string{PlaneTCP, PlanePostgres} {
			var fe *FieldError
			if _, err := fs[0].OnPlane(plane); !errors.As(err, &fe) || fe.Field != "fault.match" {
				t.Errorf("on the %s plane: %v, want an error naming fault.match", plane, err)
			}
		}
	}
}

// readClass reads the proxy's series of route class cls: its calls, in
// flight, and the count of its durations.
func readClass(t *testing.T, p *Proxy, cls string) (calls, inflight float64, durations uint64) {
	t.Helper()
	mfs, err := p.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			if !hasLabel(m, "class", cls) {
				continue
			}
			switch mf.GetName() {
			case MetricClassRequests:
				calls = m.GetCounter().GetValue()
			case MetricClassInflight:
				inflight = m.GetGauge().GetValue()
			case MetricClassDuration:
				durations = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return calls, inflight, durations
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestClassesCounted: the proxy counts each request once per route class
// it is of, on the raw data plane and through ServeHTTP, faults or not:
// its calls, in flight while it is held (a latency fault on the report
// route only) and its duration once it is answered.
func TestClassesCounted(t *testing.T) {
	classes := []Class{{Name: "report", Match: "^/reports/"}, {Name: "items", Match: "GET ^/items"}, {Name: "any", Match: "/"}}
	hold := Fault{Type: TypeLatency, Percent: 100, Params: Delay{Latency: 300 * time.Millisecond}, Match: "^/reports/"}
	check := func(t *testing.T, p *Proxy, do func(method, path string) int) {
		for range 3 {
			if code := do("GET", "/reports/daily?x=1"); code != 200 {
				t.Fatalf("status %d", code)
			}
			do("GET", "/items/7")
		}
		do("POST", "/items")
		if err := p.SetFaults([]Fault{hold}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { do("GET", "/reports/slow") })
		testkit.WaitFor(t, 5*time.Second, "the held report request in flight", func() bool {
			_, n, _ := readClass(t, p, "report")
			return n == 1
		})
		if _, n, _ := readClass(t, p, "items"); n != 0 {
			t.Errorf("items in flight %v while a report request is held, want 0", n)
		}
		wg.Wait()
		testkit.WaitFor(t, 5*time.Second, "nothing in flight", func() bool {
			_, r, _ := readClass(t, p, "report")
			_, a, _ := readClass(t, p, "any")
			return r == 0 && a == 0
		})
		for cls, want := range map[string]float64{"report": 4, "items": 3, "any": 8} {
			calls, _, durs := readClass(t, p, cls)
			if calls != want || durs != uint64(want) {
				t.Errorf("class %s: %v calls, %d durations; want %v of each", cls, calls, durs, want)
			}
		}
		if got := val(p.m.requests); got != 8 {
			t.Errorf("%v requests, want 8", got)
		}
	}
	t.Run("raw", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.Classes = classes })
		check(t, e.p, func(method, path string) int {
			req, _ := http.NewRequestWithContext(context.Background(), method, e.dataURL+path, nil)
			resp, err := e.hc.Do(req)
			if err != nil {
				t.Error(err)
				return 0
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		})
	})
	t.Run("net/http", func(t *testing.T) {
		u, _ := url.Parse("http://upstream.invalid")
		p, err := New(Config{Upstream: u, Seed: 1, Transport: memUpstream(), Classes: classes})
		if err != nil {
			t.Fatal(err)
		}
		check(t, p, func(method, path string) int {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, httptest.NewRequest(method, path, nil))
			return w.Code
		})
	})
}

// TestNoClassesNoSeries: a proxy without classes exports no class series.
func TestNoClassesNoSeries(t *testing.T) {
	e := newEnv(t)
	if code, _, _, err := e.get(context.Background(), "/reports/x", ""); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	mfs, _ := e.p.m.reg.Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "faultproxy_class_") {
			t.Errorf("series %s without classes", mf.GetName())
		}
	}
}

// TestClassesInvalid: New refuses a bad class, naming it.
func TestClassesInvalid(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, tt := range []struct {
		cs   []Class
		want string
	}{
		{[]Class{{Name: "a b", Match: "x"}}, `route class "a b"`},
		{[]Class{{Name: "a", Match: "("}}, "route class a: error parsing regexp"},
		{[]Class{{Name: "a", Match: "get /x"}}, "route class a: \"get\" before the space"},
		{[]Class{{Name: "a", Match: ""}}, "match is empty"},
		{[]Class{{Name: "a", Match: "x"}, {Name: "a", Match: "y"}}, "given twice"},
	} {
		_, err := New(Config{Upstream: u, Classes: tt.cs})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error with %q", tt.cs, err, tt.want)
		}
	}
}

// FuzzRoute: any route expression is refused with an error or matches
// without a panic, the same on a target held as bytes (the raw data
// plane) and as a string (net/http), and exactly as its method list and
// its RE2 on the target's path say; as a class's match it is refused
// when ValidateRoute refuses it.
//
//	go test -run '^$' -fuzz FuzzRoute ./faultproxy
func FuzzRoute(f *testing.F) {
	f.Add("GET ^/reports/", "GET", "/reports/daily?x=1")
	f.Add("GET|HEAD /export$", "HEAD", "http://h/a/export")
	f.Add("^/items$", "POST", "/items?reports")
	f.Add("POST ", "POST", "*")
	f.Add("get /x", "get", "/x")
	f.Add("(", "GET", "/")
	f.Add("a b", "GET", "/a b")
	f.Fuzz(func(t *testing.T, expr, method, target string) {
		r, err := parseRoute(expr)
		cerr := ValidateClasses([]Class{{Name: "c", Match: expr}})
		if err != nil || len(expr) > MaxMatchLen {
			if cerr == nil {
				t.Fatalf("class %q accepted, though its route is refused: %v", expr, err)
			}
			return
		}
		if cerr != nil {
			t.Fatalf("class %q refused: %v", expr, cerr)
		}
		raw := reqLine{raw: true, method: []byte(method), target: []byte(target)}
		str := reqLine{smethod: method, starget: target}
		got := raw.match(r)
		if gotS := str.match(r); got != gotS {
			t.Fatalf("%q on %q %q: %v as bytes, %v as a string", expr, method, target, got, gotS)
		}
		// The reference: methods before the first space, the RE2 after.
		want := true
		pathRE := expr
		if m, after, ok := strings.Cut(expr, " "); ok {
			want, pathRE = false, after
			for _, x := range strings.Split(m, "|") {
				want = want || x == method
			}
		}
		// The path: the target up to '?'; of an absolute-form target
		// (scheme://authority/path), from the first '/' after "://".
		path, _, _ := strings.Cut(target, "?")
		if _, rest, ok := strings.Cut(path, "://"); ok && !strings.HasPrefix(path, "/") {
			path = "/"
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				path = rest[i:]
			}
		}
		if want && pathRE != "" {
			want = regexp.MustCompile(pathRE).MatchString(path)
		}
		if got != want {
			t.Fatalf("%q on %q %q (path %q): matched %v, want %v", expr, method, target, path, got, want)
		}
	})
}
