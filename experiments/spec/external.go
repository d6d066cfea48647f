package spec

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// externalPart is a spec as its external family sees it: the user's own
// service, its upstreams, proxies and rules.
type externalPart struct{ *Spec }

// validateExternal checks the external block (if any): the user's service, its
// upstreams, proxies, rules and timing.
func (s externalPart) validateExternal(p *problems) {
	x := s.External
	if x == nil {
		return
	}
	unknown := func(path string, m map[string]string, known func(string) bool, what string) {
		for _, k := range sortedKeys(m) {
			if !known(k) {
				p.add(path+"."+k, "no %s %q", what, k)
			}
		}
	}
	isDep := func(k string) bool { _, ok := s.Dependencies[k]; return ok }
	unknown("external.upstreams", x.Upstreams, isDep, "dependency")
	unknown("external.proxies", x.Proxies, isDep, "dependency")
	ports := map[string]string{}
	for _, d := range s.DependencyNames() {
		tcpPart{s.Spec}.checkUpstream(p, d) // tcp.go
		path := "external.proxies." + d
		if x.Kubernetes != nil && x.Proxies[d] == "" {
			continue // a Service in the cluster
		}
		host, port, err := net.SplitHostPort(externalProxyAddr(x.Proxies[d]))
		switch {
		case err != nil:
			p.add(path, "want host:port the proxy listens on (your service calls it), got %q", x.Proxies[d])
		case port == "0" || port == "":
			p.add(path, "needs a fixed port (your service is configured to call it), got %q", x.Proxies[d])
		case ports[host+":"+port] != "":
			p.add(path, "%s is also the proxy of %s: each dependency needs its own port", x.Proxies[d], ports[host+":"+port])
		default:
			ports[host+":"+port] = d
		}
	}
	if k := x.Kubernetes; k != nil {
		for _, d := range sortedKeys(k.Replicas) {
			path := "external.kubernetes.replicas." + d
			switch n := k.Replicas[d]; {
			case !isDep(d):
				p.add(path, "no dependency %q", d)
			case n < 1 || n > MaxKubeReplicas:
				p.add(path, "%d is not in [1, %d]", n, MaxKubeReplicas)
			}
		}
		if k.Shards < 0 || k.Shards > MaxKubeShards {
			p.add("external.kubernetes.shards", "%d is not in [0, %d] (0: one)", k.Shards, MaxKubeShards)
		}
	}
	tcpPart{s.Spec}.validateTCPConditions(p)
	timingPart{s.Spec}.validateTiming(p) // timing.go
	if x.Rules != nil {
		s.validateRules(p, x.Rules)
	}
	// The section's own fields are checked where they are used: targets
	// only if some mode does not name its own.
	ownTargets := 0
	for i, m := range s.Modes {
		if m.External != nil {
			s.validateExternalService(p, fmt.Sprintf("modes[%d].external", i), *m.External, false)
			if m.External.Targets != nil {
				ownTargets++
			}
		}
		if len(m.PoolSizes) > 0 || len(m.Queues) > 0 {
			p.add(fmt.Sprintf("modes[%d]", i), "pool_sizes and queues size the built-in service; your service's pools are its own (declare them under external.pools)")
		}
		if m.PoolGroups != nil {
			p.add(fmt.Sprintf("modes[%d].pool_groups", i), "groups the built-in service's pools; your service's pools are its own (declare them under external.pools, each with its endpoints)")
		}
	}
	s.validateExternalService(p, "external", x.ExternalService, ownTargets < len(s.Modes))
	readyReported := map[string]bool{}
	for i := range s.Modes {
		m := &s.Modes[i]
		es := s.ExternalOf(m)
		if len(es.Start) > 0 && es.Ready == "" && es.Canary == "" {
			path := "external.ready" // the start command is the section's
			if m.External != nil && m.External.Start != nil {
				path = fmt.Sprintf("modes[%d].external.ready", i)
			}
			if !readyReported[path] {
				readyReported[path] = true
				p.add(path, "required with start (or a canary): the URL that answers 2xx once the service is up")
			}
		}
	}
	if !s.set("modes") && s.Audit == nil { // an audit maps the service as it is
		p.add("modes", "name the mode your service is configured as (shared or bulkhead), or list both, "+
			"each with its own external.targets (a deployment per configuration) or external.start (a command per configuration)")
	} else if len(s.Modes) > 1 {
		seen := map[string]string{}
		for i := range s.Modes {
			es := s.ExternalOf(&s.Modes[i])
			key := fmt.Sprint(es.Targets, es.Start, es.Env, es.Dir)
			if other, dup := seen[key]; dup {
				p.add(fmt.Sprintf("modes[%d]", i), "configures your service exactly as mode %s does (same targets, same start command): "+
					"give each mode its own external.targets (a deployment in that configuration) or its own external.start", other)
			}
			seen[key] = s.Modes[i].Name
		}
	}
}

// validateExternalService checks one configuration of the user's service
// at path ("external" or "modes[i].external"). Targets are required for
// every endpoint when needTargets, or when any is given.
func (s externalPart) validateExternalService(p *problems, path string, x ExternalService, needTargets bool) {
	for _, k := range sortedKeys(x.Targets) {
		if !s.hasEndpoint(k) {
			p.add(path+".targets."+k, "no endpoint %q", k)
		}
	}
	if needTargets || x.Targets != nil {
		for _, e := range s.Endpoints {
			checkURL(p, path+".targets."+e.Name, x.Targets[e.Name])
		}
	}
	if x.Canary != "" {
		checkURL(p, path+".canary", x.Canary)
	}
	if m := x.Metrics; m != nil {
		checkURL(p, path+".metrics.url", m.URL)
		if m.InUse == "" && m.Available == "" && m.Conns == nil && len(s.External.Timing.histogramNames()) == 0 {
			p.add(path+".metrics", "name in_use (permits in use) or available (free permits, with limit), or conns (connection pools), "+
				"or histograms of waits and work under external.timing.histograms")
		}
		if c := m.Conns; c != nil {
			if c.InUse == "" {
				p.add(path+".metrics.conns.in_use", "required: the gauge of connections in use")
			}
			if c.Limit == "" {
				p.add(path+".metrics.conns.limit", "required: the gauge of the pool's maximum connections")
			}
		}
		if m.Available != "" && m.Limit == "" {
			p.add(path+".metrics.limit", "required with available: permits in use are limit − available")
		}
	}
	pools := map[string]bool{}
	for i, pl := range x.Pools {
		pp := fmt.Sprintf("%s.pools[%d]", path, i)
		switch {
		case pl.Name == "" || pools[pl.Name]:
			p.add(pp+".name", "required and unique, got %q", pl.Name)
		case pl.Size < 1:
			p.add(pp+".size", "must be ≥ 1, got %d", pl.Size)
		case pl.Queue < 0:
			p.add(pp+".queue", "must be ≥ 0, got %d", pl.Queue)
		}
		pools[pl.Name] = true
		for j, e := range pl.Endpoints {
			if !s.hasEndpoint(e) {
				p.add(fmt.Sprintf("%s.endpoints[%d]", pp, j), "no endpoint %q", e)
			}
		}
	}
	if x.Start != nil && (len(x.Start) == 0 || strings.TrimSpace(x.Start[0]) == "") {
		p.add(path+".start", "want the program and its arguments, e.g. [./mysvc, --pool, shared]")
	}
	for i, a := range x.Start {
		if strings.IndexByte(a, 0) >= 0 {
			p.add(fmt.Sprintf("%s.start[%d]", path, i), "must not contain a NUL byte (no program can be given one)")
		}
	}
	if x.Ready != "" {
		checkURL(p, path+".ready", x.Ready)
	}
	if d := x.ReadyTimeout.D; d < 0 || d > 10*time.Minute {
		p.add(path+".ready_timeout", "must be within (0, 10m], got %s", d)
	}
	for _, k := range sortedKeys(x.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.add(path+".env."+k, "not an environment variable name")
		} else if strings.IndexByte(x.Env[k], 0) >= 0 {
			p.add(path+".env."+k, "must not contain a NUL byte (no environment can hold one)")
		}
	}
}

// checkURL requires raw to be an http(s) URL with a host.
func checkURL(p *problems, path, raw string) {
	u, err := url.Parse(raw)
	if raw == "" {
		p.add(path, "required")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(path, "want an http(s) URL, got %q", raw)
	}
}

// validateRules decodes each classification rule on its own, so that an
// error names the rule's line and index.
func (s externalPart) validateRules(p *problems, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.addAt(n.Line, "external.rules", "want a list of rules")
		return
	}
	for i, item := range n.Content {
		var r loadgen.Rule
		err := item.Decode(&r)
		if err == nil {
			err = loadgen.Rules{r}.Validate()
		}
		if err != nil {
			p.addAt(item.Line, fmt.Sprintf("external.rules[%d]", i), "%v", err)
		}
	}
}

// externalWarnings reports what an external service's spec leaves the
// harness unable to classify or see.
func (s externalPart) externalWarnings() []string {
	var out []string
	if x := s.External; x != nil {
		if x.Rules == nil {
			out = append(out, "external.rules: none given, so only 2xx (ok) and requests without an answer are classified; "+
				"every other response of your service (a 429, a 503 from its bulkhead) counts as unclassified, and FAILFAST "+
				"becomes INCONCLUSIVE above 1 % of them: add rules (see Rules in docs/your-service.md)")
		}
		noCanary, noMetrics := false, false
		for i := range s.Modes {
			es := s.ExternalOf(&s.Modes[i])
			noCanary = noCanary || es.Canary == ""
			noMetrics = noMetrics || es.Metrics == nil
		}
		if noCanary && *s.Validity.CanaryRate > 0 {
			out = append(out, "external.canary: none given, so a starved service cannot be told from a slow one: "+
				"name a URL of your service that does no work (its health check)")
		}
		if noMetrics {
			out = append(out, "external.metrics: none given, so the exhausted resource will read \"not observable\": "+
				"name your service's Prometheus endpoint and its bulkhead metrics")
		}
	}
	return out
}
