package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// DefaultSampleInterval is the Sampler's default scrape interval.
const DefaultSampleInterval = 250 * time.Millisecond

// SampledPrefixes are the metric name prefixes a Sampler keeps.
var SampledPrefixes = []string{"bulkhead_", "bulkheadlab_", "faultproxy_", "go_goroutines", "go_sched_gomaxprocs", "process_"}

// maxScrapeBytes bounds one /metrics body.
const maxScrapeBytes = 8 << 20

// SampleTarget is one component to sample.
type SampleTarget struct {
	// Component labels the samples, e.g. "service", "proxy-A", "dep-A".
	Component string
	// MetricsURL is the full /metrics URL; empty skips the scrape.
	MetricsURL string
	// PID, when > 0, adds the process's CPU seconds and RSS from /proc.
	PID int
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := map[string]float64{}
			if tg.MetricsURL != "" {
				if v, err := Scrape(ctx, hc, tg.MetricsURL); err == nil {
					vals = v
				}
			}
			if tg.PID > 0 {
				addProcStats(vals, tg.PID)
			}
			out[i] = rundata.MetricSample{Time: t, Component: tg.Component, Values: vals}
		}()
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

// addProcStats adds process_cpu_seconds_total and
// process_resident_memory_bytes of pid from /proc, if readable.
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
}

// Scrape fetches url and returns the kept series (SampledPrefixes) by
// their text form, e.g. `bulkhead_pool_in_use{pool="a"}`. Histograms and
// summaries contribute their _sum and _count series.
func Scrape(ctx context.Context, hc *http.Client, url string) (map[string]float64, error) {
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
	return ParseMetrics(io.LimitReader(resp.Body, maxScrapeBytes))
}

// ParseMetrics parses the Prometheus text format and keeps the series of
// SampledPrefixes; see Scrape.
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := map[string]float64{}
	for name, fam := range fams {
		if !kept(name) {
			continue
		}
		for _, m := range fam.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				out[series(name+"_sum", m.GetLabel())] = h.GetSampleSum()
				out[series(name+"_count", m.GetLabel())] = float64(h.GetSampleCount())
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
	return out, nil
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
