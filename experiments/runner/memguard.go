package runner

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// The memory guard: while a run runs, the runner reads the resident memory
// of the service's processes (each process the runner started for the
// service, with its descendants) from /proc every MemoryGuardInterval;
// when together they reach the run's ceiling, it kills their process
// groups at once (SIGKILL: a graceful stop would let them grow on while
// they drain) and stops the load. The run ends as rundata.StatusStopped
// with a rundata.MemoryStop record: what the service did (its memory grew
// past the ceiling), not a flaw of the measurement, so it is not run
// again. A service the runner did not start (external targets alone) is
// not guarded: the runner has no process of it.

// MemoryGuardInterval is how often the guard reads the service's memory:
// a service growing at 100 MiB/s passes its ceiling by at most ~10 MiB.
const MemoryGuardInterval = 100 * time.Millisecond

// DefaultMaxServiceMemory is the guard's ceiling when the plan sets none:
// half of the machine's memory (MemTotal), or 4 GiB where /proc/meminfo
// cannot be read.
func DefaultMaxServiceMemory() int64 {
	if total, ok := memTotal(); ok {
		return total / 2
	}
	return 4 << 30
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// guardedProcess is one of the service's processes: a component's name
// and the pid of its process group's leader.
type guardedProcess struct {
	component string
	pid       int
}

// serviceProcesses are the processes of the service among a run's sample
// targets: the service's, or each instance's of a fleet.
func serviceProcesses(targets []SampleTarget) []guardedProcess {
	var out []guardedProcess
	for _, t := range targets {
		if t.PID > 0 && (t.Component == rundata.ServiceComponent || rundata.IsInstanceComponent(t.Component)) {
			out = append(out, guardedProcess{t.Component, t.PID})
		}
	}
	return out
}

// memoryGuard watches the service's processes' memory against limit.
// Run it on a goroutine of its own; tripped returns its record once it
// stopped the run.
type memoryGuard struct {
	procs    []guardedProcess
	limit    int64
	interval time.Duration // MemoryGuardInterval if 0
	// phase, if set, names the phase the load is in.
	phase func() string
	// stop is called once, after the processes were killed: it stops the
	// load.
	stop func()
	// rss reads a process tree's resident memory (processRSS if nil).
	rss func(pid int) int64
	// killed, if set, is told each component the guard kills (before it
	// is signalled), so that its end counts as neither a crash nor a
	// teardown error.
	killed func(component string)

	mu       sync.Mutex
	rec      *rundata.MemoryStop
	curPhase string
}

// run reads the memory every interval until ctx ends or the guard trips.
func (g *memoryGuard) run(ctx context.Context) {
	if len(g.procs) == 0 || g.limit <= 0 {
		return
	}
	rss := g.rss
	if rss == nil {
		rss = processRSS
	}
	tick := time.NewTicker(orDefault(g.interval, MemoryGuardInterval))
	defer tick.Stop()
	for {
		var total, most int64
		var top guardedProcess
		for _, p := range g.procs {
			r := rss(p.pid)
			total += r
			if r >= most {
				most, top = r, p
			}
		}
		if total >= g.limit {
			g.trip(top, total)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// trip kills every guarded process group, records the stop and stops the
// load.
func (g *memoryGuard) trip(top guardedProcess, total int64) {
	rec := &rundata.MemoryStop{At: time.Now().UTC(), Component: top.component, PID: top.pid, RSSBytes: total, LimitBytes: g.limit}
	if g.phase != nil {
		rec.Phase = g.phase()
	}
	for _, p := range g.procs {
		if g.killed != nil {
			g.killed(p.component)
		}
		_ = signalGroup(p.pid, syscall.SIGKILL)
	}
	g.mu.Lock()
	g.rec = rec
	g.mu.Unlock()
	if g.stop != nil {
		g.stop()
	}
}

// tripped returns the guard's record, nil while it has not stopped the
// run.
func (g *memoryGuard) tripped() *rundata.MemoryStop {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rec
}

// processRSS is the resident memory of process pid and its descendants
// (their /proc/<pid>/statm resident pages), 0 for a process that is gone.
// A user's service started through a shell or a package manager is the
// whole tree.
func processRSS(pid int) int64 {
	var total int64
	seen := map[int]bool{}
	todo := []int{pid}
	for len(todo) > 0 && len(seen) < 4096 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		total += statmRSS(p)
		todo = append(todo, childrenOf(p)...)
	}
	return total
}

var pageSize = int64(os.Getpagesize())

// statmRSS reads a process's resident set from /proc/<pid>/statm, in bytes.
func statmRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * pageSize
}

// childrenOf lists the children of every thread of process pid
// (/proc/<pid>/task/<tid>/children).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// startMemoryGuard starts the run's memory guard over the service's
// processes in st (none: a guard that never trips), recording its ceiling
// in meta; stop, its cancel, returns once it no longer runs. The guard
// stops the load with abort.
func (r *Runner) startMemoryGuard(ctx context.Context, run plan.Run, st *Stack, meta *rundata.RunMeta, abort func()) (*memoryGuard, func()) {
	g := &memoryGuard{procs: serviceProcesses(st.Samples), limit: run.MaxServiceMemory, stop: abort, killed: st.markKilled}
	if g.limit <= 0 {
		g.limit = DefaultMaxServiceMemory()
	}
	g.phase = g.currentPhase
	if len(g.procs) == 0 {
		return g, func() {}
	}
	meta.MaxServiceMemory = g.limit
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); g.run(gctx) }()
	return g, func() { cancel(); <-done }
}

// inPhase records the phase the load entered, for the guard's record.
func (g *memoryGuard) inPhase(name string) {
	g.mu.Lock()
	g.curPhase = name
	g.mu.Unlock()
}

func (g *memoryGuard) currentPhase() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.curPhase
}
