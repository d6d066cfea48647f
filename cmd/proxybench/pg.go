package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/pgproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
)

// The pg phase measures a PostgreSQL dependency behind both proxies: a
// real server (Debian's postgresql, started for the phase), queried with
// SELECT 1 over kept pgx connections at a scheduled rate (open), through
// ours in its PostgreSQL mode (bulkheadlab proxy --protocol postgres,
// faults per query) and through Toxiproxy's TCP proxy (toxics per
// connection), and directly. Pass-through at -pg-rates; then the latency
// fault's error: ours' latency fault on every query against Toxiproxy's
// latency toxic on the server's answers, each -delay.

const toxiPGName = "benchpg"

// pgQuery is what each exchange runs: the smallest round trip.
const pgQuery = "SELECT 1"

// pgBench holds the pg phase's targets.
type pgBench struct {
	direct, ours, toxi tcpTarget
	control            string // ours' control API
	server             *pgserver.Server
}

func (b *bench) startPG(ctx context.Context) (*pgBench, error) {
	o := b.o
	s, err := pgserver.Start(pgserver.Options{MaxConnections: 4*o.tcpConns + 64})
	if err != nil {
		return nil, err
	}
	pb := &pgBench{server: s, direct: tcpTarget{"direct", s.Addr, 0}}
	args := append([]string{"proxy", "--protocol", "postgres", "--upstream", "postgres://" + s.Addr, "--listen", "127.0.0.1:0",
		"--control", "127.0.0.1:0", "--name", "benchpg", "--seed", "1"}, strings.Fields(o.oursArgs)...)
	ours, oursOut, err := startChild("bulkheadlab-proxy-pg", b.logDir, childEnv(o.childProcs), o.childNice, o.bulkheadlab, args...)
	if err != nil {
		s.Stop()
		return nil, err
	}
	b.children = append(b.children, ours)
	line, err := readFirstLine(ctx, ours, oursOut, 10*time.Second)
	if err != nil {
		s.Stop()
		return nil, err
	}
	var a announce.Announcement
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.Addr == "" || a.Control == "" {
		s.Stop()
		return nil, fmt.Errorf("bulkheadlab proxy --protocol postgres announced %q: %v", line, err)
	}
	tl, err := b.tx.createProxy(toxiPGName, s.Addr)
	if err != nil {
		s.Stop()
		return nil, err
	}
	pb.ours = tcpTarget{"ours", a.Addr, ours.pid()}
	pb.toxi = tcpTarget{"toxiproxy", tl, b.toxiSrv.pid()}
	pb.control = a.Control
	return pb, nil
}

// pgPhase runs the PostgreSQL pass-through and latency-fault measurements
// and prints their tables.
func (b *bench) pgPhase(ctx context.Context) error {
	o := b.o
	pb, err := b.startPG(ctx)
	if err != nil {
		return err
	}
	defer pb.server.Stop()
	fmt.Fprintf(b.out, "## PostgreSQL\n\n`%s` (the simple query protocol) over %d kept pgx connections to a real PostgreSQL, queries scheduled at the rate (open), %d rounds × %v per target and rate, targets interleaved (reversed in odd rounds); added = target − direct of the same round, median over rounds. Ours: the PostgreSQL plane (faults per query); Toxiproxy: its TCP proxy (toxics per connection). CPU: the proxy process's, per query.\n\n",
		pgQuery, o.tcpConns, o.rounds, o.tcpDur)
	all := []tcpTarget{pb.direct, pb.ours, pb.toxi}
	for _, rate := range o.pgRates {
		for _, t := range all {
			if _, err := pgAttack(ctx, t, rate, o.tcpConns, o.warmup, o.timeout); err != nil {
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
				c, err := pgAttack(ctx, t, rate, o.tcpConns, o.tcpDur, o.timeout)
				if err != nil {
					return err
				}
				cells[t.name] = append(cells[t.name], c)
			}
		}
		printTCPPass(b.out, rate, all, cells)
	}
	return b.pgDelay(ctx, pb)
}

// pgDelay puts a -delay latency on every query of ours and a -delay latency
// toxic on the server's answers through Toxiproxy, and reports measured −
// intended per query.
func (b *bench) pgDelay(ctx context.Context, pb *pgBench) (err error) {
	o := b.o
	if err := pgproxy.Put(ctx, nil, pb.control, []pgproxy.Fault{{Type: pgproxy.TypeLatency, Percent: 100, Latency: o.delay}}); err != nil {
		return err
	}
	if err := b.tx.addLatency(toxiPGName, "delay", o.delay); err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, pgproxy.Put(context.Background(), nil, pb.control, nil), b.tx.removeToxic(toxiPGName, "delay"))
	}()
	conns := max(o.tcpConns, int(float64(o.delayRate)*o.delay.Seconds()*2)+8)
	cells := map[string][]tcpCell{}
	ts := []tcpTarget{pb.ours, pb.toxi}
	for _, t := range ts { // the connections' log-ins, which Toxiproxy's toxic slows too
		if _, err := pgAttack(ctx, t, o.delayRate, conns, o.warmup, o.timeout); err != nil {
			return err
		}
	}
	for r := range o.rounds {
		if r%2 == 1 {
			slices.Reverse(ts)
		}
		for _, t := range ts {
			c, err := pgAttack(ctx, t, o.delayRate, conns, o.delayDur, o.timeout)
			if err != nil {
				return err
			}
			cells[t.name] = append(cells[t.name], c)
		}
	}
	fmt.Fprintf(b.out, "### Latency: %v per query at %d queries/s\n\nOurs: a latency fault on every query; Toxiproxy: a latency toxic on the server's answers (every answer of a simple query is one chunk). error = client-measured query − %v (signed), the connections' log-ins not counted:\n\n| target | queries | ok | error p50 | error p99 |\n|---|---|---|---|---|\n",
		o.delay, o.delayRate, o.delay)
	for _, name := range []string{"ours", "toxiproxy"} {
		var errs []time.Duration
		sent, ok := 0, 0
		for _, c := range cells[name] {
			sent, ok = sent+c.sent, ok+c.ok
			for _, l := range c.lat {
				errs = append(errs, l-o.delay)
			}
		}
		slices.Sort(errs)
		fmt.Fprintf(b.out, "| %s | %d | %.3f %% | %+.3f ms | %+.3f ms |\n", name, sent, 100*float64(ok)/float64(max(sent, 1)),
			msf(quantile(errs, 0.5)), msf(quantile(errs, 0.99)))
	}
	fmt.Fprintln(b.out)
	return nil
}

// pgAttack runs pgQuery at rate for d over conns kept connections to t:
// queries are scheduled at the rate whether or not the earlier ones have
// come back, and taken by the first free connection; a failed connection
// is replaced. The connections log in before the clock starts. Bounded in
// count (rate·d) and in time (d + timeout).
func pgAttack(ctx context.Context, t tcpTarget, rate, conns int, d, timeout time.Duration) (tcpCell, error) {
	c := tcpCell{target: t.name, rate: rate, errs: map[string]int{}}
	n := int(float64(rate) * d.Seconds())
	dsn := pgserver.DSNAt(t.addr)
	connect := func() (*pgconn.PgConn, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return pgconn.Connect(cctx, dsn)
	}
	pool := make([]*pgconn.PgConn, conns)
	defer func() {
		for _, pc := range pool {
			if pc != nil {
				pc.Close(context.Background())
			}
		}
	}()
	for i := range pool {
		pc, err := connect()
		if err != nil {
			return c, fmt.Errorf("%s: connect: %w", t.name, err)
		}
		pool[i] = pc
	}
	sched := make(chan time.Time, n)
	type result struct {
		lat time.Duration
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range pool {
		wg.Go(func() {
			for range sched {
				if pool[i] == nil {
					pc, err := connect()
					if err != nil {
						results <- result{err: err}
						continue
					}
					pool[i] = pc
				}
				pc := pool[i]
				qctx, cancel := context.WithTimeout(ctx, timeout)
				sent := time.Now()
				_, err := pc.Exec(qctx, pgQuery).ReadAll()
				lat := time.Since(sent)
				cancel()
				if err != nil && pc.IsClosed() {
					pool[i] = nil
				}
				results <- result{lat: lat, err: err}
			}
		})
	}
	cpu0, _ := cpuOf(t.pid)
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		sched <- at
		c.sent++
	}
	close(sched)
	wg.Wait()
	c.elapsed = time.Since(start)
	cpu1, _ := cpuOf(t.pid)
	c.cpu = cpu1 - cpu0
	close(results)
	for r := range results {
		if r.err != nil {
			c.errs[r.err.Error()]++
			continue
		}
		c.ok++
		c.lat = append(c.lat, r.lat)
	}
	slices.Sort(c.lat)
	return c, ctx.Err()
}
