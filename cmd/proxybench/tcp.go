package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/tcpproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/sysmon"
)

// The tcp phase measures both proxies' TCP data planes: a request/response
// exchange of tcpMsg bytes each way over kept connections to an echo
// upstream (the child mode tcpecho), as a client of a cache or a database
// does. Ours is bulkheadlab proxy --protocol tcp; Toxiproxy's is a second
// proxy of the same server. Beside them: direct (the upstream itself) and
// the bare relay (the floor). Rounds interleave the targets, reversed in
// odd rounds. Under the latency fault, a pipelining client (several
// requests written before the first answer is read) is timed on both
// proxies too.

const toxiTCPName = "benchtcp"

// tcpTarget is one address exchanges go to, and the process whose CPU
// time they cost (0: none measured).
type tcpTarget struct {
	name string
	addr string
	pid  int
}

// tcpBench holds the tcp phase's targets and control handles.
type tcpBench struct {
	direct, floor, ours, toxi tcpTarget
	control                   string // ours' control API
}

func (b *bench) startTCP(ctx context.Context) (*tcpBench, error) {
	o := b.o
	env := childEnv(o.childProcs)
	logDir := b.logDir
	_, upAddr, err := b.startOwn(ctx, logDir, env, "tcpecho")
	if err != nil {
		return nil, err
	}
	args := append([]string{"proxy", "--protocol", "tcp", "--upstream", "tcp://" + upAddr, "--listen", "127.0.0.1:0",
		"--control", "127.0.0.1:0", "--name", "benchtcp", "--seed", "1"}, strings.Fields(o.oursArgs)...)
	ours, oursOut, err := startChild("bulkheadlab-proxy-tcp", logDir, env, o.childNice, o.bulkheadlab, args...)
	if err != nil {
		return nil, err
	}
	b.children = append(b.children, ours)
	line, err := readFirstLine(ctx, ours, oursOut, 10*time.Second)
	if err != nil {
		return nil, err
	}
	var a announce.Announcement
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Addr == "" || a.Control == "" {
		return nil, fmt.Errorf("bulkheadlab proxy --protocol tcp announced %q: %v", line, err)
	}
	tl, err := b.tx.createProxy(toxiTCPName, upAddr)
	if err != nil {
		return nil, err
	}
	rl, rlAddr, err := b.startOwn(ctx, logDir, sysmon.Env(env), "relay", upAddr)
	if err != nil {
		return nil, err
	}
	return &tcpBench{
		direct:  tcpTarget{"direct", upAddr, 0},
		floor:   tcpTarget{"floor", rlAddr, rl.pid()},
		ours:    tcpTarget{"ours", a.Addr, ours.pid()},
		toxi:    tcpTarget{"toxiproxy", tl, b.toxiSrv.pid()},
		control: a.Control,
	}, nil
}

// tcpPhase runs the TCP pass-through, delay and maximum-rate measurements
// and prints their tables.
func (b *bench) tcpPhase(ctx context.Context, rates []int) error {
	o := b.o
	tb, err := b.startTCP(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "## TCP data plane\n\nA %d-byte request and its %d-byte echo over %d kept connections, exchanges scheduled at the rate (open), %d rounds × %v per target and rate, targets interleaved (reversed in odd rounds); added = target − direct of the same round, median over rounds. CPU: the proxy process's, per exchange.\n\n",
		tcpMsg, tcpMsg, o.tcpConns, o.rounds, o.tcpDur)
	all := []tcpTarget{tb.direct, tb.floor, tb.ours, tb.toxi}
	for _, rate := range rates {
		for _, t := range all {
			if _, err := tcpAttack(ctx, t.name, t.addr, t.pid, rate, o.tcpConns, o.warmup, o.timeout); err != nil {
				return err
			}
		}
		cells := map[string][]tcpCell{}
		for r := range o.rounds {
			ts := slices.Clone(all)
			if r%2 == 1 {
				slices.Reverse(ts)
			}
			for _, t := range ts {
				if err := b.sleep(ctx, o.pause); err != nil {
					return err
				}
				c, err := tcpAttack(ctx, t.name, t.addr, t.pid, rate, o.tcpConns, o.tcpDur, o.timeout)
				if err != nil {
					return err
				}
				cells[t.name] = append(cells[t.name], c)
			}
		}
		printTCPPass(b.out, rate, all, cells)
	}
	if err := b.tcpDelay(ctx, tb); err != nil {
		return err
	}
	return b.tcpMax(ctx, []tcpTarget{tb.direct, tb.ours, tb.toxi})
}

// tcpQ is quantile q of a cell's latencies.
func tcpQ(c tcpCell, q float64) time.Duration { return quantile(c.lat, q) }

// addedTCP is the median over rounds of target's quantile q minus
// direct's in the same round.
func addedTCP(target, direct []tcpCell, q float64) time.Duration {
	var d []time.Duration
	for i := range min(len(target), len(direct)) {
		d = append(d, tcpQ(target[i], q)-tcpQ(direct[i], q))
	}
	return median(d)
}

func printTCPPass(w interface{ Write([]byte) (int, error) }, rate int, ts []tcpTarget, cells map[string][]tcpCell) {
	fmt.Fprintf(w, "### %d exchanges/s\n\n| target | exchanges | ok | p50 | p99 | added p50 | added p99 | CPU per exchange |\n|---|---|---|---|---|---|---|---|\n", rate)
	direct := cells["direct"]
	for _, t := range ts {
		cs := cells[t.name]
		var all []time.Duration
		sent, ok := 0, 0
		var cpu time.Duration
		for _, c := range cs {
			all = append(all, c.lat...)
			sent, ok, cpu = sent+c.sent, ok+c.ok, cpu+c.cpu
		}
		slices.Sort(all)
		added50, added99, cpuPer := "—", "—", "—"
		if t.name != "direct" {
			added50 = fmt.Sprintf("%+.1f µs", usf(addedTCP(cs, direct, 0.5)))
			added99 = fmt.Sprintf("%+.1f µs", usf(addedTCP(cs, direct, 0.99)))
			cpuPer = fmt.Sprintf("%.1f µs", usf(perReq(cpu, sent)))
		}
		fmt.Fprintf(w, "| %s | %d | %.3f %% | %.1f µs | %.1f µs | %s | %s | %s |\n", t.name, sent,
			100*float64(ok)/float64(max(sent, 1)), usf(quantile(all, 0.5)), usf(quantile(all, 0.99)), added50, added99, cpuPer)
	}
	if f, o := cells["floor"], cells["ours"]; len(f) > 0 && len(o) > 0 {
		fmt.Fprintf(w, "\nours − floor (the bare relay), median over rounds: p50 %+.1f µs, p99 %+.1f µs\n", usf(addedTCP(o, f, 0.5)), usf(addedTCP(o, f, 0.99)))
	}
	fmt.Fprintln(w)
}

// tcpDelay puts a latency fault of -delay on the answers of both proxies
// and reports measured − intended per exchange.
func (b *bench) tcpDelay(ctx context.Context, tb *tcpBench) (err error) {
	o := b.o
	if err := tcpproxy.Put(ctx, nil, tb.control, []tcpproxy.Fault{{Type: tcpproxy.TypeLatency, Percent: 100,
		Stream: tcpproxy.StreamDownstream, Latency: o.delay}}); err != nil {
		return err
	}
	if err := b.tx.addLatency(toxiTCPName, "delay", o.delay); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, tcpproxy.Put(context.Background(), nil, tb.control, nil), b.tx.removeToxic(toxiTCPName, "delay"))
	}()
	conns := max(o.tcpConns, int(float64(o.delayRate)*o.delay.Seconds()*2)+8)
	cells := map[string][]tcpCell{}
	ts := []tcpTarget{tb.ours, tb.toxi}
	for r := range o.rounds {
		if r%2 == 1 {
			slices.Reverse(ts)
		}
		for _, t := range ts {
			c, err := tcpAttack(ctx, t.name, t.addr, t.pid, o.delayRate, conns, o.delayDur, o.timeout)
			if err != nil {
				return err
			}
			cells[t.name] = append(cells[t.name], c)
		}
	}
	fmt.Fprintf(b.out, "### Latency fault: %v on the answers at %d exchanges/s\n\nerror = client-measured exchange − %v (signed). CPU: the proxy process's, per exchange.\n\n| target | exchanges | ok | error p50 | error p99 | CPU per exchange |\n|---|---|---|---|---|---|\n",
		o.delay, o.delayRate, o.delay)
	cpuPer := map[string]time.Duration{}
	for _, name := range []string{"ours", "toxiproxy"} {
		var errs []time.Duration
		sent, ok := 0, 0
		var cpu time.Duration
		for _, c := range cells[name] {
			sent, ok, cpu = sent+c.sent, ok+c.ok, cpu+c.cpu
			for _, l := range c.lat {
				errs = append(errs, l-o.delay)
			}
		}
		slices.Sort(errs)
		cpuPer[name] = perReq(cpu, sent)
		fmt.Fprintf(b.out, "| %s | %d | %.3f %% | %+.3f ms | %+.3f ms | %.1f µs |\n", name, sent, 100*float64(ok)/float64(max(sent, 1)),
			msf(quantile(errs, 0.5)), msf(quantile(errs, 0.99)), usf(cpuPer[name]))
	}
	if t := cpuPer["toxiproxy"]; t > 0 {
		fmt.Fprintf(b.out, "\nCPU per exchange, ours / toxiproxy: %.2f\n", float64(cpuPer["ours"])/float64(t))
	}
	fmt.Fprintln(b.out)
	return b.tcpPipelined(ctx, ts)
}

// Pipelined clients of the tcp phase: one kept connection writes
// pipelineN requests before it reads the first answer.
const pipelineN = 8

var pipelineShapes = []struct {
	name string
	size int
	gap  time.Duration
}{
	{"8 × 64 B, 2 ms apart", 64, 2 * time.Millisecond},
	{"8 × 32 KiB, back to back", 32 << 10, 0},
}

// tcpPipelined measures a pipelining client through the latency fault
// that tcpDelay put on both proxies: per request shape, -rounds trials per
// target (interleaved, reversed in odd rounds) of pipelineTrial; it
// reports the median time to the last answer in units of the latency.
func (b *bench) tcpPipelined(ctx context.Context, ts []tcpTarget) error {
	o := b.o
	fmt.Fprintf(b.out, "### Pipelined client under the latency fault\n\nOne new connection writes %d requests before it reads the first answer (the echo of each); time from the first write to the last answer's last byte, median of %d trials, in units of the latency (%v):\n\n| requests | ours | toxiproxy | ours / toxiproxy |\n|---|---|---|---|\n",
		pipelineN, o.rounds, o.delay)
	for _, sh := range pipelineShapes {
		took := map[string][]time.Duration{}
		for r := range o.rounds {
			order := slices.Clone(ts)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, t := range order {
				if err := b.sleep(ctx, o.pause); err != nil {
					return err
				}
				d, err := pipelineTrial(t.addr, pipelineN, sh.size, sh.gap, o.timeout)
				if err != nil {
					return fmt.Errorf("%s: pipelined %s: %w", t.name, sh.name, err)
				}
				took[t.name] = append(took[t.name], d)
			}
		}
		ours, toxi := median(took["ours"]), median(took["toxiproxy"])
		fmt.Fprintf(b.out, "| %s | %.2f × | %.2f × | %.2f |\n", sh.name, float64(ours)/float64(o.delay),
			float64(toxi)/float64(o.delay), float64(ours)/float64(max(toxi, 1)))
	}
	fmt.Fprintln(b.out)
	return nil
}

// pipelineTrial dials addr, makes one 1-byte exchange (so that the proxy
// has its upstream connection), then writes n requests of size bytes, gap
// apart, while it reads their echoes; it returns the time from the first
// write to the last echo's last byte. Bounded by timeout.
func pipelineTrial(addr string, n, size int, gap, timeout time.Duration) (time.Duration, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	_ = nc.(*net.TCPConn).SetNoDelay(true)
	_ = nc.SetDeadline(time.Now().Add(2 * timeout))
	one := []byte{1}
	if _, err := nc.Write(one); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(nc, one); err != nil {
		return 0, err
	}
	req := make([]byte, size)
	wrote := make(chan error, 1)
	start := time.Now()
	go func() {
		for i := range n {
			if i > 0 && gap > 0 {
				time.Sleep(gap)
			}
			if _, err := nc.Write(req); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	_, err = io.ReadFull(nc, make([]byte, n*size))
	took := time.Since(start)
	if err != nil {
		nc.Close() // ends the writer
		<-wrote
		return 0, err
	}
	return took, <-wrote
}

// tcpMax steps the rate up from -max-start by -max-factor until a target
// no longer holds it (see tcpCell.held), per target, interleaved by step.
func (b *bench) tcpMax(ctx context.Context, ts []tcpTarget) error {
	o := b.o
	held := map[string]int{}
	failed := map[string]string{}
	for rate := o.maxStart; rate <= o.maxLimit && len(failed) < len(ts); rate = roundRate(float64(rate) * o.maxFactor) {
		for _, t := range ts {
			if failed[t.name] != "" {
				continue
			}
			if err := b.sleep(ctx, o.pause); err != nil {
				return err
			}
			c, err := tcpAttack(ctx, t.name, t.addr, t.pid, rate, o.tcpConns, o.maxStep, o.timeout)
			if err != nil {
				return err
			}
			if c.held() {
				held[t.name] = rate
			} else {
				failed[t.name] = fmt.Sprintf("%d/s: %.3f %% ok, %.0f/s", rate, 100*c.okRatio(), float64(c.ok)/c.elapsed.Seconds())
			}
		}
	}
	fmt.Fprintf(b.out, "### Highest rate held\n\nFrom %d/s ×%.2f per %v step, over %d connections; held = ≥ 99.9 %% of exchanges answered and ≥ 97 %% of the rate completed:\n\n| target | held | first not held |\n|---|---|---|\n",
		o.maxStart, o.maxFactor, o.maxStep, o.tcpConns)
	for _, t := range ts {
		first := failed[t.name]
		if first == "" {
			first = fmt.Sprintf("none up to %d/s", o.maxLimit)
		}
		fmt.Fprintf(b.out, "| %s | %d/s | %s |\n", t.name, held[t.name], first)
	}
	fmt.Fprintln(b.out)
	return nil
}
