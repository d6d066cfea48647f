// Command proxybench measures bulkheadlab's fault proxy and Toxiproxy side
// by side, in one run, against the same zero-latency upstream, with vegeta
// as the load generator (open model). It reports:
//
//   - pass-through cost: at each rate (default 1000/s and 3000/s), the
//     client-measured p50/p90/p99 of a direct call and of a call through
//     each proxy, the added latency (proxied − direct of the same round,
//     then the median over rounds; see stats.go) and each proxy's CPU time
//     per request (from /proc/<pid>/stat);
//   - the highest rate each holds (≥ 99.9 % success and ≥ 97 % of the
//     rate in successful answers), stepping the rate up;
//   - delay precision: a 225 ms latency fault (no jitter) at 200/s on both,
//     client-measured |actual − 225 ms| p50/p99.
//
// Cells are interleaved (direct, ours, toxiproxy, then the reverse order,
// and so on), and in the pass-through phase cut into slices that alternate
// between the targets within a round, so that drift of the machine cannot
// pose as a difference. A bare TCP relay (the child mode `proxybench
// relay`) runs beside them there as the floor: the least a user-space
// proxy adds on this machine (shown, not judged).
// Both proxies and the upstream are child processes started the same way:
// the same GOMAXPROCS and the same niceness. All traffic goes to
// 127.0.0.1; every attack is bounded in count and time; children are
// stopped at the end and get SIGKILL if this process dies.
//
// Usually run through scripts/bench-proxy.sh, which builds bulkheadlab and
// the pinned Toxiproxy server:
//
//	proxybench -bulkheadlab PATH -toxiproxy PATH [flags]
package main

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

type options struct {
	bulkheadlab, toxiproxy string
	phases                 string
	rates                  string
	dur, warmup, pause     time.Duration
	slice                  time.Duration
	rounds                 int
	maxStart, maxLimit     int
	maxFactor              float64
	maxStep                time.Duration
	delay                  time.Duration
	delayRate              int
	delayDur               time.Duration
	childNice, childProcs  int
	timeout                time.Duration
	maxWorkers             uint64
	profileDir             string
	profileRate            int
	profileDur             time.Duration
	keepLogs               bool
	order                  string
	floor                  bool
	oursArgs               string
	tcpConns               int           // tcp phase (tcp.go)
	tcpDur                 time.Duration // tcp phase: one cell
	pgRates                []int         // pg phase (pg.go), from pgRatesFlag
	pgRatesFlag            string
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "relay" {
		if err := runRelay(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "proxybench relay:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "tcpecho" {
		if err := runTCPEcho(); err != nil {
			fmt.Fprintln(os.Stderr, "proxybench tcpecho:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "upstream" {
		if err := runUpstream(); err != nil {
			fmt.Fprintln(os.Stderr, "proxybench upstream:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	fs := flag.NewFlagSet("proxybench", flag.ExitOnError)
	fs.StringVar(&o.bulkheadlab, "bulkheadlab", "", "path of the bulkheadlab binary (required)")
	fs.StringVar(&o.toxiproxy, "toxiproxy", "", "path of the Toxiproxy server binary (required)")
	fs.StringVar(&o.phases, "phases", "latency,max,delay", "phases to run, in this order: latency, max, delay, profile, tcp (the TCP data planes: pass-through at -rates, a -delay latency fault, the highest rate held), pg (a real PostgreSQL behind ours in its PostgreSQL mode and Toxiproxy: pass-through at -pg-rates, a -delay latency per query)")
	fs.IntVar(&o.tcpConns, "tcp-conns", 32, "tcp phase: kept connections per attack")
	fs.DurationVar(&o.tcpDur, "tcp-duration", 2*time.Second, "tcp phase: length of one pass-through cell")
	fs.StringVar(&o.rates, "rates", "1000,3000", "pass-through rates, requests/s")
	fs.StringVar(&o.pgRatesFlag, "pg-rates", "500,1500", "pg phase: pass-through rates, queries/s")
	fs.DurationVar(&o.dur, "duration", 5*time.Second, "length of one pass-through cell (one target, one round)")
	fs.DurationVar(&o.slice, "slice", 500*time.Millisecond, "pass-through: cut each cell into slices this long that alternate between the targets within the round (0: whole cells one after another)")
	fs.IntVar(&o.rounds, "rounds", 6, "rounds per rate (and of the delay phase); odd rounds reverse the order of the targets")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unrecorded warm-up attack per target before the pass-through and delay phases")
	fs.DurationVar(&o.pause, "pause", 300*time.Millisecond, "pause between cells")
	fs.IntVar(&o.maxStart, "max-start", 2000, "first rate of the maximum-rate search")
	fs.Float64Var(&o.maxFactor, "max-factor", 1.2, "rate multiplier per step of the maximum-rate search")
	fs.IntVar(&o.maxLimit, "max-limit", 40000, "the maximum-rate search stops above this rate")
	fs.DurationVar(&o.maxStep, "max-step", 3*time.Second, "length of one maximum-rate step")
	fs.DurationVar(&o.delay, "delay", 225*time.Millisecond, "latency fault of the delay-precision phase (whole milliseconds)")
	fs.IntVar(&o.delayRate, "delay-rate", 200, "rate of the delay-precision phase, requests/s")
	fs.DurationVar(&o.delayDur, "delay-duration", 5*time.Second, "length of one delay-precision cell")
	fs.IntVar(&o.childNice, "child-nice", 0, "niceness of the upstream and both proxies, relative to the load generator")
	fs.IntVar(&o.childProcs, "child-procs", runtime.NumCPU(), "GOMAXPROCS of the upstream and both proxies")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "per-request timeout of the load generator")
	fs.Uint64Var(&o.maxWorkers, "max-workers", 1000, "vegeta workers (and so connections) per attack at most")
	fs.StringVar(&o.profileDir, "profile-dir", "", "profile phase: write the proxy's CPU and allocation profiles here (default: a new temporary folder)")
	fs.IntVar(&o.profileRate, "profile-rate", 3000, "profile phase: rate, requests/s")
	fs.DurationVar(&o.profileDur, "profile-duration", 10*time.Second, "profile phase: length of the CPU profile")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep the children's stderr logs")
	fs.BoolVar(&o.floor, "floor", true, "pass-through: also measure a bare TCP relay (the least a user-space proxy adds here; shown, not judged)")
	fs.StringVar(&o.oursArgs, "ours-args", "", "extra flags of bulkheadlab proxy, space-separated, e.g. --tune-runtime=false to measure it with the Go runtime's defaults")
	fs.StringVar(&o.order, "order", "direct,ours,toxiproxy", "order of the targets in even rounds (odd rounds reverse it), e.g. toxiproxy,ours,direct")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		stop()
		os.Exit(1)
	}
}

var targetNames = []string{"direct", "ours", "toxiproxy"}

// parseOrder checks that s names each target once.
func parseOrder(s string) ([]string, error) {
	out := strings.Split(s, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	if len(out) != len(targetNames) || !slices.Equal(slices.Sorted(slices.Values(out)), targetNames) {
		return nil, fmt.Errorf("-order: want each of %s once, comma-separated; got %q", strings.Join(targetNames, ", "), s)
	}
	return out, nil
}

// inOrder returns those of ts in the order of -order.
func (b *bench) inOrder(ts ...*target) []*target {
	var out []*target
	for _, name := range b.ord {
		for _, t := range ts {
			if t.name == name {
				out = append(out, t)
			}
		}
	}
	return out
}

func parseRates(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-rates: %q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// bench is one run: the children and the three targets.
type bench struct {
	o                 options
	out               io.Writer
	up, ours, toxiSrv *child
	direct, pOurs, pT *target
	pFloor            *target // the bare relay, nil without -floor
	ctl               *faultproxy.Client
	tx                *toxi
	toxiVersion       string
	pprofAddr         string
	atk               attackOpts
	children          []*child
	ord               []string // target names in the order of even rounds
	logDir            string

	// Results for the verdicts: pass[rate] is direct, ours, toxiproxy
	// merged; maxHeld by target name; delay is ours, toxiproxy.
	pass    map[int][3]merged
	floor   map[int]merged // the bare relay's, with -floor
	maxHeld map[string]int
	delay   [2]delayStats
	ran     map[string]bool
}

const toxiProxyName = "bench"

func run(ctx context.Context, out io.Writer, o options) (err error) {
	if o.bulkheadlab == "" || o.toxiproxy == "" {
		return errors.New("-bulkheadlab and -toxiproxy are required")
	}
	rates, err := parseRates(o.rates)
	if err != nil {
		return err
	}
	if o.pgRates, err = parseRates(o.pgRatesFlag); err != nil {
		return fmt.Errorf("-pg-rates: %w", err)
	}
	ord, err := parseOrder(o.order)
	if err != nil {
		return err
	}
	phases := strings.Split(o.phases, ",")
	for _, p := range phases {
		if !slices.Contains([]string{"latency", "max", "delay", "profile", "tcp", "pg"}, p) {
			return fmt.Errorf("-phases: unknown phase %q", p)
		}
	}
	if o.delay%time.Millisecond != 0 || o.delay <= 0 {
		return fmt.Errorf("-delay: want a positive whole number of milliseconds (Toxiproxy's unit), got %v", o.delay)
	}
	logDir, err := os.MkdirTemp("", "proxybench-")
	if err != nil {
		return err
	}
	b := &bench{o: o, out: out, logDir: logDir, ord: ord, pass: map[int][3]merged{}, floor: map[int]merged{}, maxHeld: map[string]int{}, ran: map[string]bool{}}
	defer func() {
		b.stopAll()
		if err != nil || o.keepLogs {
			fmt.Fprintf(os.Stderr, "proxybench: children's logs in %s\n", logDir)
		} else {
			os.RemoveAll(logDir)
		}
	}()
	if err := b.start(ctx, logDir); err != nil {
		return err
	}
	b.header(rates)
	for _, p := range phases {
		switch p {
		case "latency":
			err = b.latencyPhase(ctx, rates)
		case "max":
			err = b.maxPhase(ctx)
		case "delay":
			err = b.delayPhase(ctx)
		case "profile":
			err = b.profilePhase(ctx)
		case "tcp":
			err = b.tcpPhase(ctx, rates)
		case "pg":
			err = b.pgPhase(ctx)
		}
		if err != nil {
			return err
		}
		if err := b.checkAlive(); err != nil {
			return err
		}
	}
	b.verdicts()
	return nil
}

func (b *bench) stopAll() {
	for i := len(b.children) - 1; i >= 0; i-- {
		b.children[i].stop(3 * time.Second)
	}
}

func (b *bench) checkAlive() error {
	for _, c := range b.children {
		if c.exited() {
			return fmt.Errorf("%s ended during the run: %v", c.name, c.err)
		}
	}
	return nil
}

// start launches the upstream, bulkheadlab's proxy and the Toxiproxy
// server (with one proxy) and makes the three targets.
func (b *bench) start(ctx context.Context, logDir string) error {
	o := b.o
	env := childEnv(o.childProcs)
	// Upstream.
	up, upAddr, err := b.startOwn(ctx, logDir, env, "upstream")
	if err != nil {
		return err
	}
	b.up = up
	// bulkheadlab proxy.
	pport, err := freePort()
	if err != nil {
		return err
	}
	b.pprofAddr = "127.0.0.1:" + pport
	args := []string{"proxy", "--upstream", "http://" + upAddr, "--listen", "127.0.0.1:0",
		"--control", "127.0.0.1:0", "--name", "bench", "--seed", "1"}
	args = append(args, strings.Fields(o.oursArgs)...)
	if slices.Contains(strings.Split(o.phases, ","), "profile") {
		args = append(args, "--pprof", b.pprofAddr)
	}
	ours, oursOut, err := startChild("bulkheadlab-proxy", logDir, env, o.childNice, o.bulkheadlab, args...)
	if err != nil {
		return err
	}
	b.children = append(b.children, ours)
	b.ours = ours
	line, err := readFirstLine(ctx, ours, oursOut, 10*time.Second)
	if err != nil {
		return err
	}
	var a announce.Announcement
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Addr == "" || a.Control == "" {
		return fmt.Errorf("bulkheadlab proxy announced %q: %v", line, err)
	}
	// Toxiproxy.
	port, err := freePort()
	if err != nil {
		return err
	}
	ts, tsOut, err := startChild("toxiproxy", logDir, env, o.childNice, o.toxiproxy, "-host", "127.0.0.1", "-port", port)
	if err != nil {
		return err
	}
	b.children = append(b.children, ts)
	b.toxiSrv = ts
	go func() { _, _ = io.Copy(io.Discard, tsOut) }()
	b.tx = &toxi{api: "http://127.0.0.1:" + port, hc: &http.Client{Timeout: 10 * time.Second}}
	if b.toxiVersion, err = b.tx.waitReady(ctx, ts, 10*time.Second); err != nil {
		return err
	}
	tl, err := b.tx.createProxy(toxiProxyName, upAddr)
	if err != nil {
		return err
	}
	if o.floor {
		// The floor runs with the Go runtime setting ours gives itself
		// (--tune-runtime), so that "above the floor" stays ours' own work.
		rl, rlAddr, err := b.startOwn(ctx, logDir, sysmon.Env(env), "relay", upAddr)
		if err != nil {
			return err
		}
		b.pFloor = newTarget("floor", "http://"+rlAddr, rl.pid(), o.timeout)
	}
	b.ctl = faultproxy.NewClient(a.Control, nil)
	b.direct = newTarget("direct", "http://"+upAddr, 0, o.timeout)
	b.pOurs = newTarget("ours", "http://"+a.Addr, ours.pid(), o.timeout)
	b.pT = newTarget("toxiproxy", "http://"+tl, ts.pid(), o.timeout)
	b.atk = attackOpts{timeout: o.timeout, maxWorkers: o.maxWorkers, upPID: up.pid()}
	return nil
}

// startOwn starts this program in a child mode (upstream, relay) and
// returns it with the address it announced ({"addr": ...} on its first
// stdout line).
func (b *bench) startOwn(ctx context.Context, logDir string, env []string, mode string, args ...string) (*child, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	c, out, err := startChild(mode, logDir, env, b.o.childNice, self, append([]string{mode}, args...)...)
	if err != nil {
		return nil, "", err
	}
	b.children = append(b.children, c)
	line, err := readFirstLine(ctx, c, out, 10*time.Second)
	if err != nil {
		return nil, "", err
	}
	var a struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Addr == "" {
		return nil, "", fmt.Errorf("%s announced %q: %v", mode, line, err)
	}
	return c, a.Addr, nil
}

func (b *bench) header(rates []int) {
	o := b.o
	ver := func(bin string) string {
		if bi, err := buildInfo(bin); err == nil {
			return bi
		}
		return "?"
	}
	fmt.Fprintf(b.out, "# proxybench %s\n\n", time.Now().Format(time.RFC3339))
	fmt.Fprintf(b.out, "- machine: %d CPUs, %s/%s, load generator %s, GOMAXPROCS %d, niceness %d\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), runtime.GOMAXPROCS(0), niceness())
	fmt.Fprintf(b.out, "- children (upstream, both proxies): GOMAXPROCS=%d, niceness +%d relative to the generator\n", o.childProcs, o.childNice)
	fmt.Fprintf(b.out, "- ours: %s (%s), flags: %s\n", filepath.Base(o.bulkheadlab), ver(o.bulkheadlab), orDefault(o.oursArgs))
	fmt.Fprintf(b.out, "- toxiproxy: %s (%s), API /version %s\n", filepath.Base(o.toxiproxy), ver(o.toxiproxy), b.toxiVersion)
	fmt.Fprintf(b.out, "- order of the targets: %s in even rounds, reversed in odd ones\n", strings.Join(b.ord, ", "))
	if b.pFloor != nil {
		fmt.Fprintf(b.out, "- floor: a bare TCP relay (proxybench relay: one goroutine per direction, no parsing, GODEBUG=%s as ours sets for itself by default), after the others in the pass-through phase; shown, not judged\n", sysmon.Setting)
	}
	n, d := sliceCell(o.dur, o.slice)
	fmt.Fprintf(b.out, "- pass-through: rates %v/s, %d rounds × %v per target (%d slices of %v, alternating), warm-up %v; max rate: from %d/s ×%.2f per step of %v; delay: %v at %d/s, %d rounds × %v\n",
		rates, o.rounds, o.dur, n, d, o.warmup, o.maxStart, o.maxFactor, o.maxStep, o.delay, o.delayRate, o.rounds, o.delayDur)
	fmt.Fprintf(b.out, "- upstream: zero latency, %d-byte body; client: vegeta, keep-alive, timeout %v, ≤ %d workers per attack\n\n",
		len(upstreamBody), o.timeout, o.maxWorkers)
}

// orDefault is s, or "(defaults)" if s is empty.
func orDefault(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(defaults)"
	}
	return s
}

// niceness is this process's nice value.
func niceness() int {
	// getpriority returns 20 − nice on Linux.
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - p
}

// order returns the targets of round r: forward on even rounds, reversed
// on odd ones.
func order(ts []*target, r int) []*target {
	out := slices.Clone(ts)
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

func (b *bench) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (b *bench) cell(ctx context.Context, t *target, rate int, d time.Duration) (cell, error) {
	return b.cellAfter(ctx, b.o.pause, t, rate, d)
}

// cellAfter attacks t at rate for d after a pause.
func (b *bench) cellAfter(ctx context.Context, pause time.Duration, t *target, rate int, d time.Duration) (cell, error) {
	if err := b.sleep(ctx, pause); err != nil {
		return cell{}, err
	}
	c := attack(ctx, t, rate, d, b.atk)
	return c, ctx.Err()
}

func (b *bench) warm(ctx context.Context, rate int) error {
	if b.o.warmup <= 0 {
		return nil
	}
	for _, t := range b.passTargets() {
		if _, err := b.cell(ctx, t, rate, b.o.warmup); err != nil {
			return err
		}
	}
	return nil
}

// sliceCell returns how many slices a pass-through cell is cut into, and
// their length.
func sliceCell(dur, slice time.Duration) (int, time.Duration) {
	if slice <= 0 || slice >= dur {
		return 1, dur
	}
	n := int((dur + slice/2) / slice)
	return n, dur / time.Duration(n)
}

// round runs round r of the pass-through phase at rate: each target's
// cell of -duration, cut into slices that alternate between the targets
// (in the round's order, then reversed, and so on), so that the targets
// of a round meet the machine in the same state: on a shared machine the
// state drifts from one second to the next, and whole cells one after
// another would charge that drift to whichever target ran in it.
func (b *bench) round(ctx context.Context, ts []*target, r, rate int) (map[string]cell, error) {
	n, d := sliceCell(b.o.dur, b.o.slice)
	out := map[string]cell{}
	for s := range n {
		for _, t := range order(ts, r+s) {
			pause := b.o.pause
			if s > 0 {
				pause = min(pause, slicePause)
			}
			c, err := b.cellAfter(ctx, pause, t, rate, d)
			if err != nil {
				return nil, err
			}
			out[t.name] = join(out[t.name], c)
		}
	}
	return out, nil
}

// slicePause is the pause between the slices of a round.
const slicePause = 20 * time.Millisecond

// passTargets are the targets of the pass-through phase in -order, the
// bare relay last.
func (b *bench) passTargets() []*target {
	ts := b.inOrder(b.direct, b.pOurs, b.pT)
	if b.pFloor != nil {
		ts = append(ts, b.pFloor)
	}
	return ts
}

func (b *bench) latencyPhase(ctx context.Context, rates []int) error {
	b.ran["latency"] = true
	fmt.Fprintf(b.out, "## Pass-through\n\n%s\n\nCells in run order:\n\n```\n", passRule)
	all := b.passTargets()
	for _, rate := range rates {
		if err := b.warm(ctx, rate); err != nil {
			return err
		}
		cells := map[string][]cell{}
		for r := 0; r < b.o.rounds; r++ {
			rc, err := b.round(ctx, all, r, rate)
			if err != nil {
				return err
			}
			for _, t := range order(all, r) {
				printCell(b.out, r, rc[t.name])
				cells[t.name] = append(cells[t.name], rc[t.name])
			}
		}
		b.pass[rate] = [3]merged{merge(cells["direct"]), merge(cells["ours"]), merge(cells["toxiproxy"])}
		if b.pFloor != nil {
			b.floor[rate] = merge(cells["floor"])
		}
	}
	fmt.Fprintf(b.out, "```\n\n")
	for _, rate := range rates {
		printPassTable(b.out, rate, b.o, b.pass[rate], b.floor[rate])
	}
	return nil
}

// maxPhase steps the rate up by maxFactor from maxStart; at each step every
// target still holding is attacked (order alternating per step); a target
// that fails a step is tried once more and, failing again, is done. Direct
// is the ceiling of the generator and upstream on this machine.
func (b *bench) maxPhase(ctx context.Context) error {
	b.ran["max"] = true
	fmt.Fprintf(b.out, "## Maximum rate\n\nSteps in run order (held = ≥ 99.9 %% ok and ≥ 97 %% of the rate in successful answers/s):\n\n```\n")
	alive := b.inOrder(b.direct, b.pOurs, b.pT)
	firstFail := map[string]cell{}
	for step, rate := 0, b.o.maxStart; len(alive) > 0 && rate <= b.o.maxLimit; step++ {
		var next []*target
		for _, t := range order(alive, step) {
			c, err := b.cell(ctx, t, rate, b.o.maxStep)
			if err != nil {
				return err
			}
			printMaxCell(b.out, c, "")
			if !c.held() {
				t.closeIdle()
				if err := b.sleep(ctx, time.Second); err != nil {
					return err
				}
				if c, err = b.cell(ctx, t, rate, b.o.maxStep); err != nil {
					return err
				}
				printMaxCell(b.out, c, " (retry)")
			}
			if c.held() {
				b.maxHeld[t.name] = rate
				next = append(next, t)
			} else {
				firstFail[t.name] = c
			}
		}
		// keep the order of -order
		alive = alive[:0]
		for _, t := range b.inOrder(b.direct, b.pOurs, b.pT) {
			if slices.Contains(next, t) {
				alive = append(alive, t)
			}
		}
		rate = roundRate(float64(rate) * b.o.maxFactor)
	}
	fmt.Fprintf(b.out, "```\n\n| target | highest rate held | next step (failed twice) |\n|---|---|---|\n")
	for _, t := range []*target{b.direct, b.pOurs, b.pT} {
		f, ok := firstFail[t.name]
		fail := "none up to the limit"
		if ok {
			fail = fmt.Sprintf("%d/s: %.2f %% ok, %.0f ok/s", f.rate, 100*f.okRatio(), f.throughput())
		}
		fmt.Fprintf(b.out, "| %s | %d/s | %s |\n", t.name, b.maxHeld[t.name], fail)
	}
	fmt.Fprintln(b.out)
	for _, t := range []*target{b.direct, b.pOurs, b.pT} {
		t.closeIdle()
	}
	return b.sleep(ctx, time.Second)
}

// roundRate rounds up to a multiple of 100 (of 10 below 1000).
func roundRate(r float64) int {
	unit := 100.0
	if r < 1000 {
		unit = 10
	}
	return int(unit * float64(int((r+unit-1)/unit)))
}

// delayStats are |actual − delay| quantiles of one target.
type delayStats struct {
	target                   string
	sent, ok                 int
	p50, p90, p99, max, mean time.Duration
}

func (b *bench) delayPhase(ctx context.Context) (err error) {
	b.ran["delay"] = true
	o := b.o
	if err := b.ctl.Set(ctx, []faultproxy.Fault{{Type: faultproxy.TypeLatency, Percent: 100, Params: faultproxy.Delay{Latency: o.delay}}}); err != nil {
		return err
	}
	if err := b.tx.addLatency(toxiProxyName, "delay", o.delay); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, b.ctl.Clear(context.Background()), b.tx.removeToxic(toxiProxyName, "delay"))
	}()
	fmt.Fprintf(b.out, "## Delay precision\n\nA %v latency fault (no jitter) on both at %d/s; error = |client-measured latency − %v|:\n\n```\n", o.delay, o.delayRate, o.delay)
	ts := b.inOrder(b.pOurs, b.pT)
	for _, t := range ts {
		if o.warmup > 0 {
			if _, err := b.cell(ctx, t, o.delayRate, o.warmup); err != nil {
				return err
			}
		}
	}
	cells := map[string][]cell{}
	for r := 0; r < o.rounds; r++ {
		for _, t := range order(ts, r) {
			c, err := b.cell(ctx, t, o.delayRate, o.delayDur)
			if err != nil {
				return err
			}
			ds := delayOf([]cell{c}, o.delay)
			fmt.Fprintf(b.out, "round %d %-9s rate %4d/s sent %5d ok %7.3f%%  |err| p50 %6.3f ms p90 %6.3f ms p99 %6.3f ms max %6.3f ms  cpu %5.1f µs/req\n",
				r+1, t.name, c.rate, c.sent, 100*c.okRatio(), msf(ds.p50), msf(ds.p90), msf(ds.p99), msf(ds.max), usf(perReq(c.cpu, c.sent)))
			cells[t.name] = append(cells[t.name], c)
		}
	}
	fmt.Fprintf(b.out, "```\n\n| target | sent | ok | |err| p50 | |err| p90 | |err| p99 | max | mean signed err |\n|---|---|---|---|---|---|---|---|\n")
	for i, t := range []*target{b.pOurs, b.pT} { // b.delay is ours, toxiproxy
		d := delayOf(cells[t.name], o.delay)
		b.delay[i] = d
		fmt.Fprintf(b.out, "| %s | %d | %.3f %% | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %+.3f ms |\n",
			t.name, d.sent, 100*float64(d.ok)/float64(max(d.sent, 1)), msf(d.p50), msf(d.p90), msf(d.p99), msf(d.max), msf(d.mean))
	}
	fmt.Fprintln(b.out)
	return nil
}

func delayOf(cells []cell, delay time.Duration) delayStats {
	var errs []time.Duration
	var sum time.Duration
	d := delayStats{}
	for _, c := range cells {
		d.target = c.target
		d.sent += c.sent
		d.ok += c.ok
		for _, l := range c.lat {
			e := l - delay
			sum += e
			errs = append(errs, max(e, -e))
		}
	}
	slices.Sort(errs)
	d.p50, d.p90, d.p99 = quantile(errs, 0.5), quantile(errs, 0.9), quantile(errs, 0.99)
	if len(errs) > 0 {
		d.max = errs[len(errs)-1]
		d.mean = sum / time.Duration(len(errs))
	}
	return d
}

// profilePhase attacks ours at profileRate while taking a CPU profile of
// it, and saves its allocation profile before and after the attack.
func (b *bench) profilePhase(ctx context.Context) error {
	o := b.o
	dir := o.profileDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "proxybench-profile-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := "http://" + b.pprofAddr + "/debug/pprof/"
	hc := &http.Client{Timeout: o.profileDur + 30*time.Second}
	fetch := func(path, file string) error {
		resp, err := hc.Get(base + path)
		if err != nil {
			return fmt.Errorf("profile %s: %w", path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("profile %s: %s", path, resp.Status)
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		_, err = io.Copy(f, resp.Body)
		return errors.Join(err, f.Close())
	}
	if err := b.cell2warm(ctx, o.profileRate); err != nil {
		return err
	}
	if err := fetch("allocs", "allocs-before.pprof"); err != nil {
		return err
	}
	cpuErr := make(chan error, 1)
	go func() {
		cpuErr <- fetch("profile?seconds="+strconv.Itoa(int(o.profileDur.Seconds())), "cpu.pprof")
	}()
	c, err := b.cell(ctx, b.pOurs, o.profileRate, o.profileDur+time.Second)
	if err != nil {
		return err
	}
	if err := <-cpuErr; err != nil {
		return err
	}
	if err := fetch("allocs", "allocs-after.pprof"); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "## Profile\n\nours at %d/s for %v: %d sent, %.3f %% ok, CPU %.1f µs/req. Profiles in %s:\n\n", o.profileRate, c.dur, c.sent, 100*c.okRatio(), usf(perReq(c.cpu, c.sent)), dir)
	fmt.Fprintf(b.out, "    go tool pprof -top %s %s\n", o.bulkheadlab, filepath.Join(dir, "cpu.pprof"))
	fmt.Fprintf(b.out, "    go tool pprof -top -sample_index=alloc_space -base %s %s %s\n\n", filepath.Join(dir, "allocs-before.pprof"), o.bulkheadlab, filepath.Join(dir, "allocs-after.pprof"))
	return nil
}

// cell2warm warms ours alone at rate (the profile phase profiles only ours).
func (b *bench) cell2warm(ctx context.Context, rate int) error {
	if b.o.warmup <= 0 {
		return nil
	}
	_, err := b.cell(ctx, b.pOurs, rate, b.o.warmup)
	return err
}

// buildInfo names the main module version and Go version of a Go binary.
func buildInfo(bin string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", err
	}
	return bi.Main.Path + " " + bi.Main.Version + ", " + bi.GoVersion, nil
}
