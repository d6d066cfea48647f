package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/render/words"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// failureWords name each class of failure in a finding.
var failureWords = map[rundata.Class]string{
	rundata.ClassRejected:       "rejected by the service",
	rundata.ClassDepTimeout:     "dependency timeouts",
	rundata.ClassDepError:       "dependency errors",
	rundata.ClassClientTimeout:  "unanswered within the client's timeout",
	rundata.ClassTransportError: "connection errors (refused, reset or closed)",
	rundata.ClassOther:          "unclassified answers",
	rundata.ClassCircuitOpen:    "refused by an open breaker",
	rundata.ClassLimited:        "refused by a concurrency limiter",
}

// rejecters name what a rejection came from when a rule's header value
// says it in one word (X-Reject: pool → "rejected by a pool").
var rejecters = map[string]string{
	"pool": "a pool", "bulkhead": "a bulkhead", "breaker": "a breaker", "circuit": "a circuit breaker",
	"limiter": "a limiter", "limit": "a limit", "queue": "a full queue", "semaphore": "a semaphore",
	"agent": "an agent's sockets", "sockets": "an agent's sockets", "connections": "a connection pool", "throttle": "a throttle",
}

// tell is what a class's failures were: its words and the answers that
// were given it (e.g. "503 X-Reject: pool").
type tell struct {
	words   string
	answers []string
}

// failureTells describes each class of failure of the experiment's runs:
// by the spec's classification rules for a service of the user's own, by
// the built-in service's headers otherwise.
func failureTells(exp *rundir.Experiment) map[rundata.Class]tell {
	out := map[rundata.Class]tell{}
	for c, w := range failureWords {
		out[c] = tell{words: w}
	}
	external := slices.ContainsFunc(exp.Runs, func(r *rundir.Run) bool { return r.Meta.External })
	if !external {
		for c, a := range map[rundata.Class]string{
			rundata.ClassRejected:    "503 " + rundata.HeaderBulkheadReject,
			rundata.ClassDepTimeout:  "504 " + rundata.HeaderDependencyError,
			rundata.ClassDepError:    "502 " + rundata.HeaderDependencyError,
			rundata.ClassCircuitOpen: "503 " + rundata.HeaderCircuitOpen,
			rundata.ClassLimited:     "503 " + rundata.HeaderConcurrencyLimit,
		} {
			t := out[c]
			t.answers = []string{a}
			out[c] = t
		}
		t := out[rundata.ClassRejected]
		t.words = "rejected by a bulkhead"
		out[rundata.ClassRejected] = t
		return out
	}
	var by []string // the rejecters the rules name
	for _, r := range exp.Rules {
		c, err := rundata.ParseClass(r.Class)
		if err != nil || c == rundata.ClassOK {
			continue
		}
		t := out[c]
		var parts []string
		for _, p := range []string{r.Status, r.Header} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		a := strings.Join(parts, " ")
		if r.Value != "" {
			a += ": " + r.Value
		}
		if r.Error != "" {
			a = strings.TrimSpace(a + fmt.Sprintf(" error %q", r.Error))
		}
		if !slices.Contains(t.answers, a) {
			t.answers = append(t.answers, a)
		}
		out[c] = t
		if c == rundata.ClassRejected {
			by = append(by, rejecters[strings.ToLower(r.Value)])
		}
	}
	if len(by) > 0 && !slices.Contains(by, "") && len(slices.Compact(slices.Sorted(slices.Values(by)))) == 1 {
		t := out[rundata.ClassRejected]
		t.words = "rejected by " + by[0]
		out[rundata.ClassRejected] = t
	}
	return out
}

// failuresOf says what endpoint e's fault-phase failures were over runs, by
// class, the largest share first: "30 % rejected by a pool (503 X-Reject:
// pool), 1 % unanswered within the client's timeout"; unclassified
// answers name their statuses. Empty without failures.
func failuresOf(runs []measure.RunSummary, e string, tells map[rundata.Class]tell) string {
	var counts rundata.Counts
	statuses := map[string]int64{}
	for _, s := range runs {
		st := s.Endpoint(e)
		for c, n := range st.FaultCounts {
			counts[c] += n
		}
		for k, n := range st.Unclassified {
			statuses[k] += n
		}
	}
	total := counts.Total()
	if total == 0 || counts.Failed() == 0 {
		return ""
	}
	var classes []rundata.Class
	for c := rundata.ClassRejected; c < rundata.NumClasses; c++ {
		if counts[c] > 0 {
			classes = append(classes, c)
		}
	}
	slices.SortStableFunc(classes, func(a, b rundata.Class) int { return int(counts[b] - counts[a]) })
	var parts []string
	for _, c := range classes {
		t := tells[c]
		s := fmt.Sprintf("%s %% %s", words.FmtHuman(100*float64(counts[c])/float64(total)), t.words)
		answers := t.answers
		if c == rundata.ClassOther && len(statuses) > 0 {
			answers = nil
			for _, k := range slices.Sorted(maps.Keys(statuses)) {
				answers = append(answers, k)
			}
		}
		if len(answers) > 0 {
			s += " (" + strings.Join(answers, " or ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
