package spec

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
	"github.com/bulkheadlab/bulkheadlab/internal/redact"
)

// postgresPart is a spec as its Postgres family sees it: dependencies that
// are a database, their upstreams and faults.
type postgresPart struct{ *Spec }

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

// pgDependency reports whether dependency d is a PostgreSQL server reached
// through the PostgreSQL plane: an external upstream postgres://host:port,
// or the dependency's protocol: postgres (without external mode, a server
// the run starts: postgresComponent).
func (s postgresPart) pgDependency(d string) bool {
	if s.Dependencies[d].Protocol == ProtocolPostgres {
		return true
	}
	if s.External == nil {
		return false
	}
	_, ok := pgproxy.CutScheme(s.External.Upstreams[d])
	return ok
}

// pgMaxConnections is the max_connections of a PostgreSQL server a run
// starts: room for every connection the service's pools may open, and the
// harness's own.
const pgMaxConnections = 300

// postgresComponent is the PostgreSQL server a run starts for dependency
// d of the built-in service, with the dependency's setup SQL.
func (s postgresPart) postgresComponent(d string) plan.Component {
	return plan.Component{Name: depComponent(d), Kind: plan.KindPostgres, Listen: anyLoopback,
		Postgres: &plan.Postgres{Name: d, Setup: s.Dependencies[d].Setup, MaxConnections: pgMaxConnections}}
}

// postgresDSN is the address the built-in service's database calls go to:
// the PostgreSQL proxy component, as the started server's user and
// database, without TLS.
func postgresDSN(proxy string) plan.Address {
	return plan.Address{Component: proxy, Scheme: "postgres",
		Path: "/" + pgserver.Database + "?user=" + pgserver.User + "&sslmode=disable&connect_timeout=10"}
}

// validatePostgres checks the faults of conditions on Postgres
// dependencies, then the endpoints that call one.
func (s postgresPart) validatePostgres(p *problems) {
	s.validatePostgresConditions(p)
	s.validatePostgresEndpoints(p)
}

// validatePostgresEndpoints checks that an endpoint of the built-in
// service whose dependency is PostgreSQL has a query, and that no other
// endpoint has one.
func (s postgresPart) validatePostgresEndpoints(p *problems) {
	for i, e := range s.Endpoints {
		path := fmt.Sprintf("endpoints[%d].query", i)
		pg := s.Dependencies[e.Dependency].Protocol == ProtocolPostgres
		switch {
		case pg && s.External == nil && strings.TrimSpace(e.Query) == "":
			p.add(path, "required: dependency %s is a PostgreSQL server (protocol: postgres), and each call of /%s runs this SQL there", e.Dependency, e.Name)
		case !pg && e.Query != "":
			p.add(path, "only an endpoint whose dependency is a PostgreSQL server (protocol: postgres) runs a query; %s is not one", e.Dependency)
		case pg && s.External != nil && e.Query != "":
			p.add(path, "your own service runs its own queries (external mode); leave it out")
		}
	}
	for _, d := range s.DependencyNames() {
		if s.Dependencies[d].Setup != "" && (s.Dependencies[d].Protocol != ProtocolPostgres || s.External != nil) {
			p.add("dependencies."+d+".setup", "only a PostgreSQL server the run starts (protocol: postgres, without external mode) has setup SQL")
		}
	}
}

// checkPostgresUpstream checks external.upstreams.<d> of a PostgreSQL
// dependency: postgres://host:port (a fixed port; the user and database
// are the service's to give), or host:port.
func (s postgresPart) checkPostgresUpstream(p *problems, d string) {
	path, raw := "external.upstreams."+d, s.External.Upstreams[d]
	addr, _ := pgproxy.CutScheme(raw)
	if strings.Contains(addr, "://") {
		p.add(path, "dependencies.%s.protocol is postgres: want postgres://host:port or host:port, got %q", d, raw)
		return
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" || port == "0" || strings.ContainsAny(addr, "/@?") {
		p.add(path, "want postgres://host:port (a fixed port; the user, password and database are your service's to give), got %q", redact.URL(raw))
	}
}

// postgresUpstream is the upstream of PostgreSQL dependency d as the proxy
// takes it: postgres://host:port.
func (s postgresPart) postgresUpstream(d string) string {
	addr, _ := pgproxy.CutScheme(s.External.Upstreams[d])
	return "postgres://" + addr
}

// validatePostgresConditions reports the faults of conditions on
// PostgreSQL dependencies that its plane has no counterpart for (a type
// without one, faultproxy.Planes, or a parameter its counterpart cannot
// take), match and code where they mean nothing, and an HTTP
// dependency's match that is not a route (faultproxy.ValidateRoute).
func (s postgresPart) validatePostgresConditions(p *problems) {
	for i, c := range s.Conditions {
		pg := s.pgDependency(c.Dependency)
		for j, f := range c.Faults {
			path := fmt.Sprintf("conditions[%d].faults[%d]", i, j)
			if !pg {
				switch {
				case f.Match == "":
				case !classesPart{s.Spec}.classedDependency(c.Dependency):
					p.add(path+".match", "only a fault on a PostgreSQL dependency (statements) or an HTTP one (routes) has a match; %s is reached over TCP", c.Dependency)
				case len(f.Match) > faultproxy.MaxMatchLen:
					p.add(path+".match", "at most %d bytes, got %d", faultproxy.MaxMatchLen, len(f.Match))
				default:
					if err := faultproxy.ValidateRoute(f.Match); err != nil {
						p.add(path+".match", "dependency %s is an HTTP one, whose faults match a route: %v", c.Dependency, err)
					}
				}
				if f.Code != "" {
					p.add(path+".code", "only a fault on a PostgreSQL dependency (protocol: postgres) answers with an SQLSTATE; %s is not one", c.Dependency)
				}
				continue
			}
			if _, err := regexp.Compile(f.Match); err != nil {
				p.add(path+".match", "%v", err)
			}
			planes := faultproxy.Planes(f.Type)
			if !slices.Contains(planes, faultproxy.PlanePostgres) {
				if planes != nil {
					p.add(path+".type", "dependency %s is a PostgreSQL server: a condition on it may have faults of the types with a PostgreSQL counterpart (%s), not %s",
						c.Dependency, strings.Join(faultproxy.TypesOn(faultproxy.PlanePostgres), ", "), f.Type)
				}
				continue
			}
			pf, err := f.toProxy()
			if err != nil || pf.Validate() != nil {
				continue // validateFault reports it
			}
			w, err := pf.OnPlane(faultproxy.PlanePostgres)
			switch {
			case err != nil:
				addPlaneErr(p, path, err, "dependency %s is a PostgreSQL server", c.Dependency)
			case f.Code != "" && w["type"] != pgproxy.TypeError:
				p.add(path+".code", "an SQLSTATE answers an error fault; this one is %s", f.Type)
			case f.Code != "" && !sqlstateRE.MatchString(f.Code):
				p.add(path+".code", "want an SQLSTATE, five digits or capital letters (57014, 53300), got %q", f.Code)
			}
		}
	}
}

// sqlstateRE is an SQLSTATE: five digits or capital letters.
var sqlstateRE = regexp.MustCompile(`^[0-9A-Z]{5}$`)

// pgFault maps a condition's fault onto the PostgreSQL plane: its type's
// counterpart there (faultproxy.Fault.OnPlane: latency is a query's answer
// held, error and abort an ErrorResponse, hang a query never answered),
// with the condition's match and, for an ErrorResponse, its SQLSTATE code
// (default: the server's own for a cancelled statement), validated by the
// PostgreSQL plane.
func pgFault(f faultproxy.Fault, match, code string) (pgproxy.Fault, error) {
	extra := map[string]any{"match": match}
	if code != "" {
		extra["code"] = code
	}
	var g pgproxy.Fault
	err := onPlane(f, faultproxy.PlanePostgres, extra, &g)
	return g, err
}

// withPostgres fills in fs.Postgres when its dependency is a PostgreSQL
// server; src, when not nil, are the spec's faults fs.Faults came from
// (their match and code). Validated specs map every fault
// (validatePostgresConditions).
func (s postgresPart) withPostgres(fs plan.Faults, src []Fault) plan.Faults {
	if !s.pgDependency(fs.Dependency) {
		return fs
	}
	fs.Postgres = make([]pgproxy.Fault, len(fs.Faults))
	for i, f := range fs.Faults {
		var match, code string
		if i < len(src) {
			match, code = src[i].Match, src[i].Code
		}
		fs.Postgres[i], _ = pgFault(f, match, code)
	}
	return fs
}

// faultActsOn reports whether fault f of a condition acts on the calls of
// endpoint ep ("": any endpoint): a fault with a match acts on the calls
// of an endpoint whose query (the built-in service's) it matches; without
// a match, or where the query is not known (your own service), on all.
func (s postgresPart) faultActsOn(f Fault, ep string) bool {
	if f.Match == "" || ep == "" {
		return true
	}
	for _, e := range s.Endpoints {
		if e.Name != ep || e.Query == "" {
			continue
		}
		re, err := regexp.Compile(f.Match)
		return err != nil || re.MatchString(e.Query)
	}
	return true
}
