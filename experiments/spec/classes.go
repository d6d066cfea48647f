package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Statement classes split one PostgreSQL dependency by what its statements
// are: `dependencies.DB.classes: {report: "(?i)\\bfrom report_",
// interactive: "…"}`. The dependency's proxy counts the queries of each
// class (pgproxy.Class), so that the audit's calibration measures which
// classes each endpoint runs, Little's law charges a fault with a match to
// the share of an endpoint's statements that it matches, and an audit
// faults each class in turn: a column per class, "DB/report slow".

// implicitClassPrefix names the classes the spec adds for the conditions'
// match expressions that no declared class has; declared names may not
// begin with it.
const implicitClassPrefix = "match-"

// validateClasses checks every dependency's classes: only on a PostgreSQL
// dependency, names like an endpoint's, expressions that compile.
func (s *Spec) validateClasses(p *problems) {
	for _, d := range slices.Sorted(maps.Keys(s.Dependencies)) {
		cs := s.Dependencies[d].Classes
		path := "dependencies." + d + ".classes"
		if len(cs) == 0 {
			continue
		}
		if !s.pgDependency(d) {
			p.add(path, "only a PostgreSQL dependency (protocol: postgres, or a postgres:// upstream) has statement classes; %s is not one", d)
			continue
		}
		if len(cs) > pgproxy.MaxClasses/2 {
			p.add(path, "at most %d classes, got %d", pgproxy.MaxClasses/2, len(cs))
		}
		for _, name := range slices.Sorted(maps.Keys(cs)) {
			re := cs[name]
			if validClass(name, re) {
				continue
			}
			switch {
			case !nameRE.MatchString(name):
				p.add(path+"."+name, "a class's name is lower-case letters, digits, _, . and - (at most 64), got %q", name)
			case strings.HasPrefix(name, implicitClassPrefix):
				p.add(path+"."+name, "names beginning with %q are the conditions' match expressions'; choose another", implicitClassPrefix)
			case strings.TrimSpace(re) == "":
				p.add(path+"."+name, "want a regular expression (RE2) on the statement's text, got nothing")
			case len(re) > pgproxy.MaxMatchLen:
				p.add(path+"."+name, "at most %d bytes, got %d", pgproxy.MaxMatchLen, len(re))
			default:
				if _, err := regexp.Compile(re); err != nil {
					p.add(path+"."+name, "%v", err)
				}
			}
		}
	}
}

// validClass reports whether a class's name and expression are valid.
func validClass(name, re string) bool {
	if !nameRE.MatchString(name) || strings.HasPrefix(name, implicitClassPrefix) || strings.TrimSpace(re) == "" || len(re) > pgproxy.MaxMatchLen {
		return false
	}
	_, err := regexp.Compile(re)
	return err == nil
}

// statementClasses are the classes dependency d's proxy counts: its
// declared classes by name, then each match expression of a condition on
// it that no declared class has, named match-1, match-2, … in order of
// first use; nil for a dependency that is not PostgreSQL.
func (s *Spec) statementClasses(d string) []rundata.StatementClass {
	if !s.pgDependency(d) {
		return nil
	}
	var out []rundata.StatementClass
	cs := s.Dependencies[d].Classes
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		if validClass(name, cs[name]) {
			out = append(out, rundata.StatementClass{Name: name, Match: cs[name]})
		}
	}
	declared := len(out)
	for _, c := range s.Conditions {
		for _, f := range c.Faults {
			if c.Dependency != d || f.Match == "" || slices.ContainsFunc(out, func(x rundata.StatementClass) bool { return x.Match == f.Match }) {
				continue
			}
			if len(out) >= pgproxy.MaxClasses {
				return out
			}
			n := strconv.Itoa(len(out) - declared + 1)
			out = append(out, rundata.StatementClass{Name: implicitClassPrefix + n, Match: f.Match})
		}
	}
	return out
}

// proxyClasses are statementClasses(d) as its proxy takes them.
func (s *Spec) proxyClasses(d string) []pgproxy.Class {
	var out []pgproxy.Class
	for _, c := range s.statementClasses(d) {
		out = append(out, pgproxy.Class{Name: c.Name, Match: c.Match})
	}
	return out
}

// metaClasses are every PostgreSQL dependency's statement classes, for the
// run's metadata (nil when there are none).
func (s *Spec) metaClasses() map[string][]rundata.StatementClass {
	var out map[string][]rundata.StatementClass
	for _, d := range s.DependencyNames() {
		if cs := s.statementClasses(d); len(cs) > 0 {
			if out == nil {
				out = map[string][]rundata.StatementClass{}
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
