package faultproxy

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/callclass"
)

// Routes: the HTTP plane's counterpart of the PostgreSQL plane's
// statement match. A route expression picks requests by their method and
// path:
//
//	^/reports/            any method, a path beginning with /reports/
//	GET ^/reports/        GET only
//	GET|HEAD /export$     GET or HEAD, a path ending with /export
//	POST                  every POST (nothing after the space: any path)
//
// The path is the request target's as the client sent it — still
// percent-encoded, without the query string (the part from '?' on), and
// for an absolute-form target (http://host/p) its path only — and the
// expression (RE2) matches anywhere in it unless anchored. A method, in
// capitals, comes before one space; several are joined with '|'. A path
// has no space, so the expression after the method has none either.
//
// A fault's Match makes it act on the requests of its route only (the
// others are passed as if it were not set), and the proxy's classes
// (Config.Classes) count the requests of each route: the calls, those in
// flight and their durations (faultproxy_class_requests_total{class}…),
// as the PostgreSQL plane counts its statement classes.

// route is a parsed route expression.
type route struct {
	methods []string       // any method when empty
	re      *regexp.Regexp // any path when nil
	// prefix, when re is anchored at the start and begins with a literal
	// (^/reports/…), is that literal: a path without it is no match, found
	// without running re; prefixOnly: re is that and nothing else.
	prefix     string
	prefixOnly bool
}

// errRouteSpace is the error of a route expression with a space in its
// path expression.
var errRouteSpace = errors.New(`a request's path has no space: write a method in capitals and one space before the path's expression ("GET ^/reports/"), or the expression alone`)

// parseRoute parses a route expression (see Routes above).
func parseRoute(expr string) (*route, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("empty: want a regular expression (RE2) on the request's path, optionally after a method (\"GET ^/reports/\")")
	}
	r := &route{}
	rest := expr
	if m, after, ok := strings.Cut(expr, " "); ok {
		for _, x := range strings.Split(m, "|") {
			if !isMethod(x) {
				return nil, fmt.Errorf("%q before the space: want a method in capitals (GET, POST…) or several joined with '|'; a request's path has no space", m)
			}
			r.methods = append(r.methods, x)
		}
		rest = after
	}
	if strings.ContainsRune(rest, ' ') {
		return nil, errRouteSpace
	}
	if rest != "" {
		re, err := regexp.Compile(rest)
		if err != nil {
			return nil, err
		}
		r.re = re
		r.prefix, r.prefixOnly = anchoredPrefix(rest)
	}
	return r, nil
}

// anchoredPrefix returns the literal an expression that compiles begins
// with right after its ^ (start of text), "" if it does not so begin, and
// whether it is ^ and that literal alone.
func anchoredPrefix(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return "", false
	}
	lit := re.Sub[1]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return "", false
	}
	return string(lit.Rune), len(re.Sub) == 2
}

// isMethod reports whether s is a method as a route expression writes
// it: a token without lower-case letters.
func isMethod(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !tchar[c] || c >= 'a' && c <= 'z' || c == '|' {
			return false
		}
	}
	return true
}

// ValidateRoute checks a route expression: a fault's match or a class's
// on the HTTP plane.
func ValidateRoute(expr string) error {
	if len(expr) > MaxMatchLen {
		return fmt.Errorf("at most %d bytes, got %d", MaxMatchLen, len(expr))
	}
	_, err := parseRoute(expr)
	return err
}

// MaxMatchLen bounds a route expression, as the PostgreSQL plane's match.
const MaxMatchLen = callclass.MaxMatchLen

// reqLine is what a route expression looks at of a request: its method
// and target, as the raw plane holds them (bytes) or net/http (strings).
type reqLine struct {
	raw            bool
	method, target []byte
	smethod        string
	starget        string
	// The target's path (routePath), once a route needed it.
	pathDone bool
	path     []byte
	spath    string
}

// match reports whether the request is of route r.
func (l *reqLine) match(r *route) bool {
	if len(r.methods) > 0 {
		ok := false
		for _, m := range r.methods {
			if l.raw && string(l.method) == m || !l.raw && l.smethod == m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if r.re == nil {
		return true
	}
	if !l.pathDone {
		l.pathDone = true
		if l.raw {
			l.path = routePath(l.target)
		} else {
			l.spath = routePathString(l.starget)
		}
	}
	if l.raw {
		if !bytes.HasPrefix(l.path, []byte(r.prefix)) {
			return false
		}
		return r.prefixOnly || r.re.Match(l.path)
	}
	if !strings.HasPrefix(l.spath, r.prefix) {
		return false
	}
	return r.prefixOnly || r.re.MatchString(l.spath)
}

// routePath is a request target's path as routes match it: without the
// query, the path of an absolute-form target.
func routePath(t []byte) []byte {
	if i := bytes.IndexByte(t, '?'); i >= 0 {
		t = t[:i]
	}
	if len(t) > 0 && t[0] != '/' {
		if i := bytes.Index(t, []byte("://")); i >= 0 {
			t = t[i+3:]
			if j := bytes.IndexByte(t, '/'); j >= 0 {
				return t[j:]
			}
			return []byte("/")
		}
	}
	return t
}

// routePathString is routePath of a target held as a string.
func routePathString(t string) string {
	if i := strings.IndexByte(t, '?'); i >= 0 {
		t = t[:i]
	}
	if len(t) > 0 && t[0] != '/' {
		if i := strings.Index(t, "://"); i >= 0 {
			t = t[i+3:]
			if j := strings.IndexByte(t, '/'); j >= 0 {
				return t[j:]
			}
			return "/"
		}
	}
	return t
}

// A Class is a named class of requests, a route: those that match Match, a
// route expression (see ValidateRoute). The proxy counts the requests of
// each class, faults or not, so that how many requests of each route an
// endpoint of the service makes can be measured from outside
// (faultproxy_class_requests_total{class}), with those in flight and their
// durations beside it, as the PostgreSQL plane's statement classes.
type Class = callclass.Class

// MaxClasses bounds a proxy's classes (a bit each per request).
const MaxClasses = callclass.Max

// ValidateClasses checks cs: at most MaxClasses, each with a name of
// letters, digits, _, . and - (unique) and a route expression that
// ValidateRoute accepts; errors name the class.
func ValidateClasses(cs []Class) error {
	return callclass.Validate(cs, "faultproxy: route class", func(re string) error { _, err := parseRoute(re); return err })
}

// The series of the route classes, by class (rundata.MetricClass*).
const (
	MetricClassRequests = "faultproxy_class_requests_total"
	MetricClassInflight = "faultproxy_class_inflight_requests"
	MetricClassDuration = "faultproxy_class_request_duration_seconds"
)

var classSeries = callclass.Series{
	Calls:        MetricClassRequests,
	Inflight:     MetricClassInflight,
	Duration:     MetricClassDuration,
	CallsHelp:    "Requests received on the data plane whose method and path match the route class, by class; a request may be of several.",
	InflightHelp: "Requests of the route class in progress, by class (as faultproxy_inflight_requests: on the raw data plane until their answer begins).",
	DurationHelp: "Requests of the route class: from their arrival until their answer began (raw data plane) or ended (net/http's), by class.",
	Buckets:      delayBuckets,
}

// classes are a proxy's route classes, parsed, with their series; nil
// when it has none.
type classes struct {
	routes []*route
	n      *callclass.Counters
}

func newClasses(cs []Class, reg *prometheus.Registry) *classes {
	if len(cs) == 0 {
		return nil
	}
	routes, n := callclass.Build(cs, func(m string) *route { r, _ := parseRoute(m); return r }, classSeries, reg) // validated
	return &classes{routes: routes, n: n}
}

// match returns the classes (a bit each) that the request is of.
func (cs *classes) match(l *reqLine) uint64 {
	var m uint64
	for i, r := range cs.routes {
		if l.match(r) {
			m |= 1 << i
		}
	}
	return m
}

// enter counts a request of the classes bits, in flight from now;
// leave ends it, arrived at arrived.
func (cs *classes) enter(bits uint64) {
	cs.n.Count(bits)
	cs.n.Enter(bits)
}

func (cs *classes) leave(bits uint64, arrived time.Time) {
	cs.n.Leave(bits, time.Since(arrived), true)
}
