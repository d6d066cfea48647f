package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// classesPart is a spec as its call-classes family sees it: the classes of
// calls to each dependency.
type classesPart struct{ *Spec }

// Classes split one dependency by what its calls are: statement classes
// of a PostgreSQL dependency (`dependencies.DB.classes: {report:
// "(?i)\\bfrom report_", interactive: "…"}`, RE2 on the statement's
// text) or route classes of an HTTP one (`dependencies.API.classes:
// {report: "^/reports/", items: "GET ^/items/"}`, a route expression on
// the request's method and path: faultproxy.ValidateRoute). The
// dependency's proxy counts the calls of each class (pgproxy.Class,
// faultproxy.Class), so that the audit's calibration measures which
// classes each endpoint calls, Little's law charges a fault with a match
// to the share of an endpoint's calls that it matches, and an audit
// faults each class in turn: a column per class, "DB/report slow",
// "API/report slow".

// implicitClassPrefix names the classes the spec adds for the conditions'
// match expressions that no declared class has; declared names may not
// begin with it.
const implicitClassPrefix = "match-"

// validateClasses checks every dependency's classes: only on a PostgreSQL
// or an HTTP dependency, names like an endpoint's, expressions that
// compile (RE2 on a statement; a route on a request).
func (s classesPart) validateClasses(p *problems) {
	for _, d := range slices.Sorted(maps.Keys(s.Dependencies)) {
		cs := s.Dependencies[d].Classes
		path := "dependencies." + d + ".classes"
		if len(cs) == 0 {
			continue
		}
		if !s.classedDependency(d) {
			p.add(path, "only a PostgreSQL dependency (statement classes) or an HTTP one (route classes) has classes; %s is reached over TCP (%s), whose bytes have no statements or routes", d, s.External.Upstreams[d])
			continue
		}
		if len(cs) > faultproxy.MaxClasses/2 {
			p.add(path, "at most %d classes, got %d", faultproxy.MaxClasses/2, len(cs))
		}
		what := "a regular expression (RE2) on the statement's text"
		if !(postgresPart{s.Spec}).pgDependency(d) {
			what = `a route: a regular expression (RE2) on the request's path, optionally after a method ("GET ^/reports/")`
		}
		for _, name := range slices.Sorted(maps.Keys(cs)) {
			re := cs[name]
			if s.validClass(d, name, re) {
				continue
			}
			switch {
			case !nameRE.MatchString(name):
				p.add(path+"."+name, "a class's name is lower-case letters, digits, _, . and - (at most 64), got %q", name)
			case strings.HasPrefix(name, implicitClassPrefix):
				p.add(path+"."+name, "names beginning with %q are the conditions' match expressions'; choose another", implicitClassPrefix)
			case strings.TrimSpace(re) == "":
				p.add(path+"."+name, "want %s, got nothing", what)
			case len(re) > faultproxy.MaxMatchLen:
				p.add(path+"."+name, "at most %d bytes, got %d", faultproxy.MaxMatchLen, len(re))
			default:
				if err := s.compileMatch(d, re); err != nil {
					p.add(path+"."+name, "%v", err)
				}
			}
		}
	}
}

// classedDependency reports whether dependency d's calls can be classed
// and matched: a PostgreSQL dependency's statements, an HTTP one's
// requests (not a TCP one's bytes).
func (s classesPart) classedDependency(d string) bool {
	return postgresPart{s.Spec}.pgDependency(d) || !tcpPart{s.Spec}.tcpDependency(d)
}

// callNoun is what dependency d's classes class: "statements" of a
// PostgreSQL dependency, "requests" of an HTTP one.
func (s classesPart) callNoun(d string) string {
	if (postgresPart{s.Spec}).pgDependency(d) {
		return "statements"
	}
	return "requests"
}

// compileMatch checks a class's or a fault's match on dependency d: RE2
// on a PostgreSQL dependency's statements, a route on an HTTP one's
// requests.
func (s classesPart) compileMatch(d, re string) error {
	if (postgresPart{s.Spec}).pgDependency(d) {
		_, err := regexp.Compile(re)
		return err
	}
	return faultproxy.ValidateRoute(re)
}

// validClass reports whether a class's name and expression on dependency
// d are valid.
func (s classesPart) validClass(d, name, re string) bool {
	if !nameRE.MatchString(name) || strings.HasPrefix(name, implicitClassPrefix) || strings.TrimSpace(re) == "" || len(re) > faultproxy.MaxMatchLen {
		return false
	}
	return s.compileMatch(d, re) == nil
}

// callClasses are the classes dependency d's proxy counts: its declared
// classes by name, then each match expression of a condition on it that
// no declared class has, named match-1, match-2, … in order of first use;
// nil for a dependency reached over TCP.
func (s classesPart) callClasses(d string) []rundata.CallClass {
	if !s.classedDependency(d) {
		return nil
	}
	var out []rundata.CallClass
	cs := s.Dependencies[d].Classes
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		if s.validClass(d, name, cs[name]) {
			out = append(out, rundata.CallClass{Name: name, Match: cs[name]})
		}
	}
	declared := len(out)
	for _, c := range s.Conditions {
		for _, f := range c.Faults {
			if c.Dependency != d || f.Match == "" || slices.ContainsFunc(out, func(x rundata.CallClass) bool { return x.Match == f.Match }) {
				continue
			}
			if s.compileMatch(d, f.Match) != nil || len(f.Match) > faultproxy.MaxMatchLen {
				continue // validatePostgresConditions reports it
			}
			if len(out) >= faultproxy.MaxClasses {
				return out
			}
			n := strconv.Itoa(len(out) - declared + 1)
			out = append(out, rundata.CallClass{Name: implicitClassPrefix + n, Match: f.Match})
		}
	}
	return out
}

// proxyClasses are callClasses(d) as its proxy takes them (the HTTP and
// the PostgreSQL planes take the same Class).
func (s classesPart) proxyClasses(d string) []faultproxy.Class {
	var out []faultproxy.Class
	for _, c := range s.callClasses(d) {
		out = append(out, faultproxy.Class{Name: c.Name, Match: c.Match})
	}
	return out
}

// metaClasses are every dependency's classes, for the run's metadata (nil
// when there are none).
func (s classesPart) metaClasses() map[string][]rundata.CallClass {
	var out map[string][]rundata.CallClass
	for _, d := range s.DependencyNames() {
		if cs := s.callClasses(d); len(cs) > 0 {
			if out == nil {
				out = map[string][]rundata.CallClass{}
			}
			out[d] = cs
		}
	}
	return out
}

// classColumnName is the name of the audit condition that faults class
// cls of dependency dep with fault (e.g. slow-db-report).
func classColumnName(fault, dep, cls string) string {
	return fmt.Sprintf("%s-%s-%s", fault, strings.ToLower(dep), cls)
}
