package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/faultproxy"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// Calibrate measures a service's call graph: it starts run's components
// (the audit's control run), sends each endpoint one request (a warm-up,
// not counted), then for each endpoint in turn reads every
// fault proxy's count of calls over an idle stretch and over cal.Requests
// requests sent to that endpoint alone at cal.Rate, and keeps the
// difference per request. An endpoint calls a dependency when its proxy
// saw at least rundata.MinCallsPerRequest calls per request beyond the
// idle count. A proxy of the TCP plane counts bytes, not calls: any
// traffic beyond the idle stretch's counts as one call per request.
// The requests are the endpoints' own (method, headers, body), with the
// client time-out of the run's load;
// an endpoint that answers none of them 2xx is listed in Failed (its
// edges may be missing). The stack is stopped before Calibrate returns.
func Calibrate(ctx context.Context, l Launcher, run plan.Run, cal rundata.Calibration, logPath func(string) string) (rundata.CallGraph, error) {
	g := rundata.CallGraph{Requests: cal.Requests, Rate: cal.Rate, Edges: map[string][]string{}}
	if cal.Requests <= 0 || !(cal.Rate > 0) {
		return g, fmt.Errorf("calibration: requests %d and rate %g must be positive", cal.Requests, cal.Rate)
	}
	if l == nil {
		l = NewProcessLauncher()
	}
	st, err := l.Launch(ctx, run, logPath)
	if err != nil {
		return g, fmt.Errorf("calibration: %w", err)
	}
	defer func() { _ = st.Stop() }()
	proxies := map[string]SampleTarget{} // dependency → its proxy's metrics
	for _, c := range run.Components {
		if c.Kind != plan.KindProxy || c.Proxy == nil {
			continue
		}
		for _, s := range st.Samples {
			if s.Component == c.Name && s.MetricsURL != "" {
				proxies[c.Proxy.Name] = s
			}
		}
	}
	if len(proxies) == 0 {
		return g, fmt.Errorf("calibration: the run has no fault proxy to count calls")
	}
	timeout := run.Load.ClientTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	span := time.Duration(float64(cal.Requests) / cal.Rate * float64(time.Second))
	// One request to each endpoint first, not counted: a service that
	// opens its connections on first use (a database pool) is not judged
	// by its first request.
	for _, e := range run.Load.Endpoints {
		if url, _, err := resolveTargets(e, st.URLs); err == nil {
			_, _ = sendSpaced(ctx, hc, e, url, 1, cal.Rate)
		}
	}
	for _, e := range run.Load.Endpoints {
		url, _, err := resolveTargets(e, st.URLs)
		if err != nil {
			return g, fmt.Errorf("calibration: endpoint %s: %w", e.Name, err)
		}
		before, err := callCounts(ctx, hc, proxies)
		if err != nil {
			return g, err
		}
		if !faultproxy.SleepUntil(ctx.Done(), nil, time.Now().Add(span)) {
			return g, ctx.Err()
		}
		idle, err := callCounts(ctx, hc, proxies)
		if err != nil {
			return g, err
		}
		ok, lastErr := sendSpaced(ctx, hc, e, url, cal.Requests, cal.Rate)
		if ctx.Err() != nil {
			return g, ctx.Err()
		}
		after, err := callCounts(ctx, hc, proxies)
		if err != nil {
			return g, err
		}
		ec := rundata.EndpointCalls{Endpoint: e.Name, OK: ok, Calls: map[string]float64{}}
		for dep := range proxies {
			idleN := idle[dep].n - before[dep].n
			n := after[dep].n - idle[dep].n - idleN
			if after[dep].bytes {
				n = 0
				if after[dep].n-idle[dep].n > 2*idleN {
					n = float64(cal.Requests)
				}
			}
			perReq := max(0, n) / float64(cal.Requests)
			ec.Calls[dep] = perReq
			for cls, a := range after[dep].classes {
				// As the dependency's calls: beyond the idle stretch's.
				i, b := idle[dep].classes[cls], before[dep].classes[cls]
				if ec.Classes == nil {
					ec.Classes = map[string]map[string]float64{}
				}
				if ec.Classes[dep] == nil {
					ec.Classes[dep] = map[string]float64{}
				}
				ec.Classes[dep][cls] = max(0, a-i-(i-b)) / float64(cal.Requests)
			}
			if perReq >= rundata.MinCallsPerRequest {
				g.Edges[e.Name] = append(g.Edges[e.Name], dep)
			}
		}
		slices.Sort(g.Edges[e.Name])
		if ok == 0 {
			if g.Failed == nil {
				g.Failed = map[string]string{}
			}
			g.Failed[e.Name] = lastErr
		}
		g.Endpoints = append(g.Endpoints, ec)
	}
	return g, nil
}

// proxyCount is a proxy's count of calls, or of bytes for the TCP plane;
// and its calls of each class (a PostgreSQL proxy's statement classes, an
// HTTP proxy's route classes).
type proxyCount struct {
	n       float64
	bytes   bool
	classes map[string]float64
}

// callCounts reads every proxy's count.
func callCounts(ctx context.Context, hc *http.Client, proxies map[string]SampleTarget) (map[string]proxyCount, error) {
	out := map[string]proxyCount{}
	for dep, tg := range proxies {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := Scrape(sctx, ctlauth.Client(hc, tg.Token), tg.MetricsURL)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("calibration: proxy of %s: %w", dep, err)
		}
		var c proxyCount
		var bytes float64
		seen := false
		for k, v := range m {
			switch {
			case k == rundata.MetricProxyRequests || strings.HasPrefix(k, rundata.MetricProxyRequests+"{"):
				c.n += v
				seen = true
			case k == tcpBytes || strings.HasPrefix(k, tcpBytes+"{"):
				bytes += v
			case strings.HasPrefix(k, rundata.MetricPgClassQueries+"{"), strings.HasPrefix(k, rundata.MetricClassRequests+"{"):
				if _, ls, ok := rundata.ParseKey(k); ok && ls["class"] != "" {
					if c.classes == nil {
						c.classes = map[string]float64{}
					}
					c.classes[ls["class"]] = v
				}
			}
		}
		if !seen {
			c = proxyCount{n: bytes, bytes: true}
		}
		out[dep] = c
	}
	return out, nil
}

// tcpBytes is the TCP plane's count of bytes relayed.
const tcpBytes = "faultproxy_tcp_bytes_total"

// sendSpaced sends n of endpoint e's requests to url, one every 1/rate, each waited for
// before the next is due (a slow answer delays the next), and returns how
// many were answered 2xx and the last failure.
func sendSpaced(ctx context.Context, hc *http.Client, e plan.Endpoint, url string, n int, rate float64) (int, string) {
	every := time.Duration(float64(time.Second) / rate)
	ok, last := 0, ""
	next := time.Now()
	for range n {
		if !faultproxy.SleepUntil(ctx.Done(), nil, next) {
			break
		}
		next = next.Add(every)
		method := e.Method
		if method == "" {
			method = http.MethodGet
		}
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(e.Body))
		if err != nil {
			return ok, err.Error()
		}
		for k, v := range e.Header {
			req.Header[k] = v
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			ok++
		} else {
			last = resp.Status
		}
	}
	return ok, last
}
