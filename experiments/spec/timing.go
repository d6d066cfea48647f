package spec

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// ExternalTiming declares the role of the Server-Timing metrics a user's
// service sends (external.timing): which are time spent waiting (for a
// pool's connection, in a queue), which work (a query, a call), and which
// the report leaves out (a metric of the whole request, wait and work
// together). A metric not listed takes rundata.DefaultTimingRole: a wait
// when its name or description contains wait, queue, acquire or pool,
// left out when it is named total, work otherwise.
type ExternalTiming struct {
	Wait   []string `yaml:"wait,omitempty"`
	Work   []string `yaml:"work,omitempty"`
	Ignore []string `yaml:"ignore,omitempty"`
}

// validateTiming checks external.timing: every name a Server-Timing metric
// name, each in one list once.
func (s *Spec) validateTiming(p *problems) {
	t := s.External.Timing
	if t == nil {
		return
	}
	seen := map[string]string{}
	for _, l := range []struct {
		role  string
		names []string
	}{{rundata.TimingWait, t.Wait}, {rundata.TimingWork, t.Work}, {rundata.TimingIgnore, t.Ignore}} {
		for i, n := range l.names {
			path := fmt.Sprintf("external.timing.%s[%d]", l.role, i)
			switch {
			case !loadgen.ValidTimingName(n):
				p.add(path, "want a Server-Timing metric name (a token such as db or pool_wait, at most %d bytes, as your service sends it), got %q", rundata.MaxTimingText, n)
			case seen[n] == l.role:
				p.add(path, "%q is listed twice", n)
			case seen[n] != "":
				p.add(path, "%q is also listed under %s: a metric has one role", n, seen[n])
			default:
				seen[n] = l.role
			}
		}
	}
}

// roles are the declared roles as the run records them; nil without
// external.timing.
func (t *ExternalTiming) roles() *rundata.TimingRoles {
	if t == nil {
		return nil
	}
	return &rundata.TimingRoles{Wait: t.Wait, Work: t.Work, Ignore: t.Ignore}
}
