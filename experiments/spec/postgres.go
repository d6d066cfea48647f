package spec

import (
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
)

// A dependency of an external spec whose upstream is postgres://host:port
// (or whose protocol is postgres) is a PostgreSQL server: its proxy is the
// fault proxy's PostgreSQL plane, which follows the wire protocol, and its
// conditions' faults act per query (pgFault): a latency fault holds a
// query's answer, an error fault answers the query with an ErrorResponse
// of a chosen SQLSTATE (code), a hang never answers it; match, a regular
// expression on the statement's text, makes a fault act on the matching
// queries only (the analytical query slow, the interactive ones not).

// Protocols of a dependency.
const (
	ProtocolHTTP     = "http"
	ProtocolTCP      = "tcp"
	ProtocolPostgres = "postgres"
)

// postgresSchemes are the URL schemes of a PostgreSQL upstream.
var postgresSchemes = []string{"postgres://", "postgresql://"}

// hasPostgresScheme reports whether raw starts with a PostgreSQL scheme,
// and returns the rest.
func hasPostgresScheme(raw string) (string, bool) {
	for _, p := range postgresSchemes {
		if rest, ok := strings.CutPrefix(raw, p); ok {
			return rest, true
		}
	}
	return raw, false
}

// pgDependency reports whether dependency d is a PostgreSQL server reached
// through the PostgreSQL plane: an external upstream postgres://host:port,
// or the dependency's protocol: postgres.
func (s *Spec) pgDependency(d string) bool {
	if s.External == nil {
		return false
	}
	_, ok := hasPostgresScheme(s.External.Upstreams[d])
	return ok || s.Dependencies[d].Protocol == ProtocolPostgres
}

// checkPostgresUpstream checks external.upstreams.<d> of a PostgreSQL
// dependency: postgres://host:port (a fixed port; the user and database
// are the service's to give), or host:port.
func (s *Spec) checkPostgresUpstream(p *problems, d string) {
	path, raw := "external.upstreams."+d, s.External.Upstreams[d]
	addr, _ := hasPostgresScheme(raw)
	if strings.Contains(addr, "://") {
		p.add(path, "dependencies.%s.protocol is postgres: want postgres://host:port or host:port, got %q", d, raw)
		return
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" || port == "0" || strings.ContainsAny(addr, "/@?") {
		p.add(path, "want postgres://host:port (a fixed port; the user, password and database are your service's to give), got %q", raw)
	}
}

// postgresUpstream is the upstream of PostgreSQL dependency d as the proxy
// takes it: postgres://host:port.
func (s *Spec) postgresUpstream(d string) string {
	addr, _ := hasPostgresScheme(s.External.Upstreams[d])
	return "postgres://" + addr
}

// validatePostgresConditions reports the faults of conditions on
// PostgreSQL dependencies that its plane has no counterpart for, and
// match and code where they mean nothing.
func (s *Spec) validatePostgresConditions(p *problems) {
	for i, c := range s.Conditions {
		pg := s.pgDependency(c.Dependency)
		for j, f := range c.Faults {
			path := fmt.Sprintf("conditions[%d].faults[%d]", i, j)
			if !pg {
				if f.Match != "" {
					p.add(path+".match", "only a fault on a PostgreSQL dependency (protocol: postgres) matches statements; %s is not one", c.Dependency)
				}
				if f.Code != "" {
					p.add(path+".code", "only a fault on a PostgreSQL dependency (protocol: postgres) answers with an SQLSTATE; %s is not one", c.Dependency)
				}
				continue
			}
			switch {
			case f.Type == faultproxy.TypeCapacity || f.Type == faultproxy.TypePayload:
				p.add(path+".type", "dependency %s is a PostgreSQL server: a condition on it may have latency, error or abort (→ an ErrorResponse) and hang faults, not %s", c.Dependency, f.Type)
			case f.Type == faultproxy.TypeLatency && f.Distribution != "" && f.Distribution != "uniform":
				p.add(path+".distribution", "dependency %s is a PostgreSQL server, whose latency fault is uniform; got %q", c.Dependency, f.Distribution)
			case f.Code != "" && f.Type != faultproxy.TypeError && f.Type != faultproxy.TypeAbort:
				p.add(path+".code", "an SQLSTATE answers an error fault; this one is %s", f.Type)
			case f.Code != "" && !sqlstateRE.MatchString(f.Code):
				p.add(path+".code", "want an SQLSTATE, five digits or capital letters (57014, 53300), got %q", f.Code)
			}
			if _, err := regexp.Compile(f.Match); err != nil {
				p.add(path+".match", "%v", err)
			}
		}
	}
}

// sqlstateRE is an SQLSTATE: five digits or capital letters.
var sqlstateRE = regexp.MustCompile(`^[0-9A-Z]{5}$`)

// pgFault maps a condition's fault onto the PostgreSQL plane: latency is
// a query's answer held, error and abort an ErrorResponse with the fault's
// SQLSTATE (default: the server's own for a cancelled statement), hang a
// query never answered. Validated specs have no other types.
func pgFault(f faultproxy.Fault, match, code string) pgproxy.Fault {
	g := pgproxy.Fault{Percent: f.Percent, Match: match}
	switch f.Type {
	case faultproxy.TypeLatency:
		g.Type, g.Latency, g.Jitter = pgproxy.TypeLatency, f.Latency, f.Jitter
	case faultproxy.TypeError, faultproxy.TypeAbort:
		g.Type, g.Code = pgproxy.TypeError, code
		if g.Code == "" {
			g.Code = pgproxy.DefaultCode
		}
		g.Message = fmt.Sprintf("injected by the fault proxy (%s)", f.Type)
	case faultproxy.TypeHang:
		g.Type = pgproxy.TypeHang
	}
	return g
}

// withPostgres fills in fs.Postgres when its dependency is a PostgreSQL
// server; src, when not nil, are the spec's faults fs.Faults came from
// (their match and code).
func (s *Spec) withPostgres(fs plan.Faults, src []Fault) plan.Faults {
	if !s.pgDependency(fs.Dependency) {
		return fs
	}
	fs.Postgres = make([]pgproxy.Fault, len(fs.Faults))
	for i, f := range fs.Faults {
		var match, code string
		if i < len(src) {
			match, code = src[i].Match, src[i].Code
		}
		fs.Postgres[i] = pgFault(f, match, code)
	}
	return fs
}
