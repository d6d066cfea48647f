package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
)

// tcpPart is a spec as its TCP family sees it: dependencies spoken to over
// raw TCP.
type tcpPart struct{ *Spec }

// A dependency of an external spec whose upstream is tcp://host:port is
// reached over TCP (a database, a cache, a broker): its proxy is the fault
// proxy's TCP data plane, and its conditions' faults are mapped onto the
// TCP faults (tcpFault).

// tcpDependency reports whether dependency d is reached over TCP: an
// external upstream tcp://host:port, or the dependency's protocol: tcp.
func (s tcpPart) tcpDependency(d string) bool {
	return s.External != nil && (strings.HasPrefix(s.External.Upstreams[d], "tcp://") || s.Dependencies[d].Protocol == ProtocolTCP)
}

// upstreamURL is the external upstream of d as the proxy takes it:
// tcp://host:port for a TCP dependency, postgres://host:port for a
// PostgreSQL one.
func (s tcpPart) upstreamURL(d string) string {
	u := s.External.Upstreams[d]
	switch {
	case postgresPart{s.Spec}.pgDependency(d):
		return postgresPart{s.Spec}.postgresUpstream(d)
	case s.tcpDependency(d) && !strings.HasPrefix(u, "tcp://"):
		return "tcp://" + u
	}
	return u
}

// validateProtocol checks dependencies.<d>.protocol.
func (s tcpPart) validateProtocol(p *problems, d, path string) {
	switch proto := s.Dependencies[d].Protocol; {
	case proto == "" || proto == ProtocolHTTP:
	case proto != ProtocolTCP && proto != ProtocolPostgres:
		p.add(path+".protocol", "want http, tcp or postgres, got %q", proto)
	case s.External == nil && proto == ProtocolTCP:
		p.add(path+".protocol", "%s needs your own service and dependency (external mode, external.upstreams.%s: %s://host:port): the built-in dependency stubs speak HTTP", proto, d, proto)
	}
}

// checkUpstream checks external.upstreams.<d>: an http(s) URL, for a TCP
// dependency tcp://host:port (host:port with protocol: tcp), for a
// PostgreSQL one postgres://host:port.
func (s tcpPart) checkUpstream(p *problems, d string) {
	path, raw := "external.upstreams."+d, s.External.Upstreams[d]
	proto := s.Dependencies[d].Protocol
	if _, isPG := pgproxy.CutScheme(raw); isPG || proto == ProtocolPostgres {
		if isPG && proto != "" && proto != ProtocolPostgres {
			p.add(path, "%q is a PostgreSQL address, but dependencies.%s.protocol is %s", raw, d, proto)
			return
		}
		postgresPart{s.Spec}.checkPostgresUpstream(p, d)
		return
	}
	addr, isTCP := strings.CutPrefix(raw, "tcp://")
	switch {
	case isTCP && proto == "http":
		p.add(path, "%q is a TCP address, but dependencies.%s.protocol is http", raw, d)
		return
	case !isTCP && proto != "tcp":
		checkURL(p, path, raw)
		return
	case !isTCP && strings.Contains(raw, "://"):
		p.add(path, "dependencies.%s.protocol is tcp: want host:port or tcp://host:port, got %q", d, raw)
		return
	}
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" || port == "0" || strings.Contains(addr, "/") {
		p.add(path, "want tcp://host:port (a fixed port), got %q", raw)
	}
}

// validateTCPConditions reports the faults of conditions on TCP
// dependencies that the TCP plane has no counterpart for: a type without
// one (faultproxy.Planes), or a parameter its counterpart cannot take.
func (s tcpPart) validateTCPConditions(p *problems) {
	for i, c := range s.Conditions {
		if !s.tcpDependency(c.Dependency) {
			continue
		}
		for j, f := range c.Faults {
			path := fmt.Sprintf("conditions[%d].faults[%d]", i, j)
			if !slices.Contains(faultproxy.Planes(f.Type), faultproxy.PlaneTCP) {
				if faultproxy.Planes(f.Type) != nil {
					p.add(path+".type", "dependency %s is reached over TCP (%s): a condition on it may have faults of the types with a TCP counterpart (%s), not %s",
						c.Dependency, s.External.Upstreams[c.Dependency], strings.Join(faultproxy.TypesOn(faultproxy.PlaneTCP), ", "), f.Type)
				}
				continue
			}
			pf, err := f.toProxy()
			if err != nil || pf.Validate() != nil {
				continue // validateFault reports it
			}
			if _, err := tcpFault(pf); err != nil {
				addPlaneErr(p, path, err, "dependency %s is reached over TCP", c.Dependency)
			}
		}
	}
}

// tcpFault maps a condition's fault onto the TCP plane: its type's
// counterpart there (faultproxy.Fault.OnPlane: latency is latency on the
// answers, error and abort a reset as soon as a request arrives, hang a
// timeout that never closes...), validated by the TCP plane.
func tcpFault(f faultproxy.Fault) (tcpproxy.Fault, error) {
	var t tcpproxy.Fault
	err := onPlane(f, faultproxy.PlaneTCP, nil, &t)
	return t, err
}

// onPlane decodes into to, a fault of plane (its JSON decoding validates
// it), the counterpart of f there with the keys of extra added.
func onPlane(f faultproxy.Fault, plane string, extra map[string]any, to json.Unmarshaler) error {
	w, err := f.OnPlane(plane)
	if err != nil {
		return err
	}
	w["percent"] = f.Percent
	maps.Copy(w, extra)
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return to.UnmarshalJSON(b)
}

// addPlaneErr reports err, an error of mapping the fault at path onto
// another plane, at the field it names (a *faultproxy.FieldError's
// "fault.distribution"), after the words of format.
func addPlaneErr(p *problems, path string, err error, format string, args ...any) {
	var fe *faultproxy.FieldError
	msg := fmt.Sprintf(format, args...)
	if errors.As(err, &fe) {
		p.add(path+strings.TrimPrefix(fe.Field, "fault"), "%s: %s", msg, fe.Msg)
		return
	}
	p.add(path, "%s: %v", msg, err)
}

// withTCP fills in fs.TCP when its dependency is reached over TCP.
// Validated specs map every fault (validateTCPConditions).
func (s tcpPart) withTCP(fs plan.Faults) plan.Faults {
	if !s.tcpDependency(fs.Dependency) {
		return fs
	}
	fs.TCP = make([]tcpproxy.Fault, len(fs.Faults))
	for i, f := range fs.Faults {
		fs.TCP[i], _ = tcpFault(f)
	}
	return fs
}
