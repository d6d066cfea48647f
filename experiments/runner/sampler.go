package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"google.golang.org/protobuf/proto"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/bulkheadlab/bulkheadlab/internal/runtimestats"
)

// DefaultSampleInterval is the Sampler's default scrape interval.
const DefaultSampleInterval = 250 * time.Millisecond

// SampledPrefixes are the metric name prefixes a Sampler keeps.
var SampledPrefixes = []string{"bulkhead_", "bulkheadlab_", "faultproxy_", "go_goroutines", "go_sched_gomaxprocs", "process_"}

// maxScrapeBytes bounds one /metrics body.
const maxScrapeBytes = 8 << 20

// SampleTarget is one component to sample. Set any of MetricsURL,
// Gatherer, PID and Machine.
type SampleTarget struct {
	// Component labels the samples, e.g. "service", "proxy-A", "dep-A".
	Component string
	// MetricsURL is the full /metrics URL to scrape.
	MetricsURL string
	// Gatherer is read in this process instead of a scrape (the runner's
	// own metrics).
	Gatherer prometheus.Gatherer
	// PID, when > 0, adds the process's CPU seconds, RSS and run-queue
	// wait from /proc.
	PID int
	// Machine adds the machine's CPU time from /proc/stat.
	Machine bool
	// Token, if set, is sent with each scrape of MetricsURL (a proxy's
	// control API asks for the run's token).
	Token string
	// Map, if set, renames the target's own metrics to the harness's (a
	// user's service that exports its bulkheads under other names).
	Map *plan.MetricMap
}

// Sampler scrapes every target's /metrics at a fixed interval and writes
// one rundata.MetricSample JSON line per target and tick to Out. Targets
// are scraped concurrently; only the Run goroutine writes to Out. A
// Sampler must not be changed while Run runs.
type Sampler struct {
	Targets  []SampleTarget
	Out      io.Writer
	Interval time.Duration // DefaultSampleInterval if ≤ 0
	Client   *http.Client  // nil: a client whose timeout is max(interval, 1s)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnSample, if set, is called on the Run goroutine with each tick's
	// samples after they are written (for live progress); it must be quick.
	OnSample func([]rundata.MetricSample)

	// prev holds, per target, the cumulative buckets of the quantile
	// histograms at the previous tick (touched by one goroutine per tick).
	prev []map[string]float64
}

// Run samples until ctx is done, then returns nil; it returns early only
// when writing to Out fails. A failed scrape of one target is skipped
// (its process stats are still written). Each scrape is bounded by the
// client timeout, and Run stops scraping when ctx ends.
func (s *Sampler) Run(ctx context.Context) error {
	interval := orDefault(s.Interval, DefaultSampleInterval)
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: max(interval, time.Second)}
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	s.prev = make([]map[string]float64, len(s.Targets))
	enc := json.NewEncoder(s.Out)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		samples := s.sampleAll(ctx, hc, now())
		for _, sm := range samples {
			if err := enc.Encode(sm); err != nil {
				return fmt.Errorf("sampler: write: %w", err)
			}
		}
		if s.OnSample != nil {
			s.OnSample(samples)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (s *Sampler) sampleAll(ctx context.Context, hc *http.Client, t time.Time) []rundata.MetricSample {
	out := make([]rundata.MetricSample, len(s.Targets))
	var wg sync.WaitGroup
	for i, tg := range s.Targets {
		wg.Go(func() {
			vals := map[string]float64{}
			switch {
			case tg.MetricsURL != "" && tg.Map != nil:
				if v, err := scrape(ctx, hc, tg.MetricsURL, mapKeep(tg.Map), mapBuckets(tg.Map)); err == nil {
					vals = applyMap(v, tg.Map)
				}
			case tg.MetricsURL != "":
				if v, err := Scrape(ctx, ctlauth.Client(hc, tg.Token), tg.MetricsURL); err == nil {
					vals = v
				}
			case tg.Gatherer != nil:
				if fams, err := tg.Gatherer.Gather(); err == nil {
					vals = keptSeries(fams, kept, isQuantileHistogram)
				}
			}
			s.prev[i] = intervalQuantiles(vals, s.prev[i])
			if tg.PID > 0 {
				addProcStats(vals, tg.PID)
			}
			if tg.Machine {
				addMachineStats(vals)
			}
			out[i] = rundata.MetricSample{Time: t, Component: tg.Component, Values: vals}
		})
	}
	wg.Wait()
	kept := out[:0]
	for _, sm := range out {
		if len(sm.Values) > 0 {
			kept = append(kept, sm)
		}
	}
	return kept
}

// quantileHistograms are the histograms whose p99 over each sampling
// interval the sampler derives from their buckets (written as
// <name>_p99, in the histogram's unit); their buckets are not kept.
var quantileHistograms = []string{runtimestats.SchedLatency, runtimestats.GCPause}

func isQuantileHistogram(name string) bool { return slices.Contains(quantileHistograms, name) }

// intervalQuantiles replaces the bucket series of quantileHistograms in
// vals by the p99 of the observations since prev (the buckets of the
// previous tick), and returns the buckets of this tick.
func intervalQuantiles(vals, prev map[string]float64) map[string]float64 {
	cur := map[string]float64{}
	for k, v := range vals {
		if n, _, ok := strings.Cut(k, "_bucket{"); ok && isQuantileHistogram(n) {
			cur[k] = v
			delete(vals, k)
		}
	}
	for _, name := range quantileHistograms {
		type bucket struct{ le, delta float64 }
		var bs []bucket
		for k, v := range cur {
			n, labels, ok := rundata.ParseKey(k)
			if !ok || n != name+"_bucket" {
				continue
			}
			le, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				continue
			}
			bs = append(bs, bucket{le, v - prev[k]})
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
		if len(bs) == 0 || bs[len(bs)-1].delta <= 0 {
			continue // no observation in the interval
		}
		total := bs[len(bs)-1].delta
		for _, b := range bs {
			if b.delta >= 0.99*total {
				p99 := b.le
				if math.IsInf(p99, 1) && len(bs) > 1 {
					p99 = bs[len(bs)-2].le // beyond the last bound: report the bound
				}
				vals[name+"_p99"] = p99
				break
			}
		}
	}
	return cur
}

// addProcStats adds the CPU seconds, resident memory and run-queue wait
// (the time its threads were runnable but not running) of pid from /proc,
// if readable.
func addProcStats(vals map[string]float64, pid int) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return
	}
	st, err := p.Stat()
	if err != nil {
		return
	}
	vals[rundata.MetricCPUSeconds] = st.CPUTime()
	vals[rundata.MetricResidentBytes] = float64(st.ResidentMemory())
	if w, ok := runqueueWait(pid); ok {
		vals[rundata.MetricRunqueueWait] = w
	}
}

// runqueueWait sums the run-queue wait of every thread of pid
// (/proc/<pid>/task/*/schedstat, second field, nanoseconds) in seconds.
func runqueueWait(pid int) (float64, bool) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var ns float64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			ns += v
		}
	}
	return ns / 1e9, true
}

// addMachineStats adds the machine's CPU time from /proc/stat: the total,
// the busy part (all but idle and iowait) and the stolen part, in
// CPU-seconds, and the CPU count.
func addMachineStats(vals map[string]float64) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return
	}
	st, err := fs.Stat()
	if err != nil {
		return
	}
	c := st.CPUTotal
	total := c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
	vals[rundata.MetricMachineCPUSeconds] = total
	vals[rundata.MetricMachineBusySeconds] = total - c.Idle - c.Iowait
	vals[rundata.MetricMachineStealSeconds] = c.Steal
	vals[rundata.MetricMachineCPUs] = float64(len(st.CPU))
}

// Scrape fetches url and returns the kept series (SampledPrefixes) by
// their text form, e.g. `bulkhead_pool_in_use{pool="a"}`. Histograms and
// summaries contribute their _sum and _count series.
func Scrape(ctx context.Context, hc *http.Client, url string) (map[string]float64, error) {
	return scrape(ctx, hc, url, kept, isQuantileHistogram)
}

// scrape fetches url and keeps the series of the families keep keeps;
// the histograms buckets names also keep their buckets.
func scrape(ctx context.Context, hc *http.Client, url string, keep, buckets func(string) bool) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	return parseMetrics(io.LimitReader(resp.Body, maxScrapeBytes), keep, buckets)
}

// keptLines copies the lines of a Prometheus text body that belong to kept
// metric families (sample lines and their # HELP / # TYPE lines), so that
// the parser does not spend the load generator's CPU on the rest.
func keptLines(r io.Reader, keep func(string) bool) (io.Reader, error) {
	var buf bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		name := line
		if bytes.HasPrefix(line, []byte("# ")) {
			f := bytes.Fields(line)
			if len(f) < 3 {
				continue
			}
			name = f[2]
		} else if i := bytes.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		if keep(string(name)) {
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	return &buf, sc.Err()
}

// ParseMetrics parses the Prometheus text format and keeps the series of
// SampledPrefixes; see Scrape.
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	return parseMetrics(r, kept, isQuantileHistogram)
}

func parseMetrics(r io.Reader, keep, buckets func(string) bool) (map[string]float64, error) {
	r, err := keptLines(r, keep)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	list := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		list = append(list, f)
	}
	return keptSeries(list, keep, buckets), nil
}

// keptSeries flattens the kept families into series keys; histograms give
// their _sum and _count (and, for those buckets keeps, their buckets, the
// +Inf one from the count).
func keptSeries(fams []*dto.MetricFamily, keep, buckets func(string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, fam := range fams {
		name := fam.GetName()
		if !keep(name) {
			continue
		}
		for _, m := range fam.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out[series(name+"_sum", m.GetLabel())] = h.GetSampleSum()
				out[series(name+"_count", m.GetLabel())] = float64(h.GetSampleCount())
				if buckets(name) {
					for _, b := range h.GetBucket() {
						le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
						out[series(name+"_bucket", append(m.GetLabel(), &dto.LabelPair{Name: proto.String("le"), Value: &le}))] = float64(b.GetCumulativeCount())
					}
					out[series(name+"_bucket", append(m.GetLabel(), &dto.LabelPair{Name: proto.String("le"), Value: proto.String("+Inf")}))] = float64(h.GetSampleCount())
				}
			case m.GetSummary() != nil:
				sm := m.GetSummary()
				out[series(name+"_sum", m.GetLabel())] = sm.GetSampleSum()
				out[series(name+"_count", m.GetLabel())] = float64(sm.GetSampleCount())
			case m.GetCounter() != nil:
				out[series(name, m.GetLabel())] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[series(name, m.GetLabel())] = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				out[series(name, m.GetLabel())] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

func kept(name string) bool {
	for _, p := range SampledPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// series renders a series key (rundata.Key) from Prometheus labels.
func series(name string, labels []*dto.LabelPair) string {
	ls := make([]rundata.Label, len(labels))
	for i, l := range labels {
		ls[i] = rundata.L(l.GetName(), l.GetValue())
	}
	return rundata.Key(name, ls...)
}

// mapKeep keeps the harness's own series, the ones m renames and m's
// histograms (their families, and the _bucket, _sum and _count series of
// a body without # TYPE lines, which parse as series of their own).
func mapKeep(m *plan.MetricMap) func(string) bool {
	return func(name string) bool {
		if kept(name) {
			return true
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if slices.Contains(m.Histograms, name) || slices.Contains(m.Histograms, base) {
			return true
		}
		for _, n := range m.Names() {
			if name == n || name == n+"_total" {
				return true
			}
		}
		return false
	}
}

// mapBuckets keeps the buckets of quantileHistograms and of m's
// histograms.
func mapBuckets(m *plan.MetricMap) func(string) bool {
	return func(name string) bool { return isQuantileHistogram(name) || slices.Contains(m.Histograms, name) }
}

// isConnMetric reports whether canon is one of the connection-pool gauges.
func isConnMetric(canon string) bool {
	return canon == rundata.MetricConnPoolInUse || canon == rundata.MetricConnPoolLimit || canon == rundata.MetricConnPoolWaiting
}

// applyMap renames the series of a user's metrics to the harness's names:
// each series of a mapped metric becomes the canonical metric with the
// value of m.PoolLabel as its pool label; free permits (m.Available) become
// permits in use, limit − available.
func applyMap(vals map[string]float64, m *plan.MetricMap) map[string]float64 {
	out := map[string]float64{}
	avail := map[string]float64{}
	for k, v := range vals {
		name, labels, ok := rundata.ParseKey(k)
		if !ok {
			continue
		}
		canon, mapped := m.Canonical(name)
		if !mapped {
			out[k] = v
			continue
		}
		label := m.PoolLabel
		if isConnMetric(canon) {
			label = m.ConnPoolLabel
		}
		pool := labels[label]
		if pool == "" {
			pool = "service"
		}
		ls := []rundata.Label{rundata.L("pool", pool)}
		if canon == rundata.MetricPoolRejected {
			if r := labels["reason"]; r != "" {
				ls = append(ls, rundata.L("reason", r))
			} else {
				ls = append(ls, rundata.L("reason", "full"))
			}
		}
		if canon == plan.AvailableMetric {
			avail[pool] += v
			continue
		}
		out[rundata.Key(canon, ls...)] += v
	}
	for pool, a := range avail {
		limit, ok := out[rundata.Key(rundata.MetricPoolLimit, rundata.L("pool", pool))]
		if ok {
			out[rundata.Key(rundata.MetricPoolInUse, rundata.L("pool", pool))] = limit - a
		}
	}
	return out
}
