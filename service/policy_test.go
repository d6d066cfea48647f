package service

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/spf13/pflag"
)

func TestServeArgsRoundTripPolicies(t *testing.T) {
	want := Config{
		Layout:  LayoutConfig{Mode: ModeBulkhead, PoolSize: 6, Queue: 2, MaxWait: 50 * time.Millisecond},
		Timeout: 250 * time.Millisecond, Conns: 8,
		Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2"),
		Policies: map[string]PolicyConfig{
			"a": {
				Order: []string{StageBreaker, StageRetry, StageBulkhead, StageTimeout}, Timeout: 100 * time.Millisecond,
				Bulkhead: BulkheadFailsafe, RetryAfter: time.Second,
				Retry: &RetryConfig{Attempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, Jitter: 0.2,
					Seed: 1 << 60, On: []string{OutcomeRejected, OutcomeTimeout}, Budget: &BudgetConfig{MaxRate: 0.1, MinConcurrency: 2}},
				Breaker: &BreakerConfig{Kind: BreakerTime, Failures: 5, Period: time.Second, Delay: 2 * time.Second, HalfOpenTrials: 3,
					On: []string{OutcomeError}},
			},
			"b": {Limiter: &LimiterConfig{Min: 1, Max: 30, Initial: 10, Window: 500 * time.Millisecond, MinSamples: 20, MaxLimitFactor: 2},
				Limit: 3},
		},
	}
	var f ServeFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(ServeArgs(want)); err != nil {
		t.Fatal(err)
	}
	got, err := f.Config()
	if err != nil {
		t.Fatalf("Config of %v: %v", ServeArgs(want), err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip of %v:\n got %+v\nwant %+v", ServeArgs(want), got, want)
	}
	if args := ServeArgs(Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 1}, Timeout: time.Second,
		Endpoints: TwoEndpoints("http://x", "http://y")}); strings.Contains(strings.Join(args, " "), "--policy") {
		t.Errorf("a config without policies renders --policy: %v", args)
	}
}

func TestPolicyConfigErrorsNameTheField(t *testing.T) {
	base := func(p PolicyConfig) Config {
		return Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 4}, Timeout: 250 * time.Millisecond,
			Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2"), Policies: map[string]PolicyConfig{"a": p}}
	}
	for _, tc := range []struct {
		p     PolicyConfig
		field string
	}{
		{PolicyConfig{Order: []string{"retry", "bulkhead", "timeout"}}, "policies.a.order"},
		{PolicyConfig{Order: []string{"bulkhead"}}, "policies.a.order"},
		{PolicyConfig{Order: []string{"bulkhead", "timeout", "bulkhead"}}, "policies.a.order"},
		{PolicyConfig{Order: []string{"bulkhead", "fuse", "timeout"}}, "policies.a.order"},
		{PolicyConfig{Timeout: time.Second}, "policies.a.timeout"},
		{PolicyConfig{Bulkhead: "channel"}, "policies.a.bulkhead"},
		{PolicyConfig{Bulkhead: BulkheadFailsafe}, "policies.a.bulkhead"}, // shared mode
		{PolicyConfig{Limit: -1}, "policies.a.limit"},
		{PolicyConfig{Limit: 1<<30 + 1}, "policies.a.limit"},
		{PolicyConfig{Retry: &RetryConfig{Attempts: 1}}, "policies.a.retry.attempts"},
		{PolicyConfig{Retry: &RetryConfig{Attempts: 3, Jitter: 2}}, "policies.a.retry.jitter"},
		{PolicyConfig{Retry: &RetryConfig{Attempts: 3, On: []string{"slow"}}}, "policies.a.retry.on"},
		{PolicyConfig{Retry: &RetryConfig{Attempts: 3, Budget: &BudgetConfig{}}}, "policies.a.retry.budget.max_rate"},
		{PolicyConfig{Breaker: &BreakerConfig{Failures: 0, Delay: time.Second}}, "policies.a.breaker.failures"},
		{PolicyConfig{Breaker: &BreakerConfig{Failures: 3}}, "policies.a.breaker.delay"},
		{PolicyConfig{Breaker: &BreakerConfig{Kind: BreakerTime, Failures: 3, Delay: time.Second}}, "policies.a.breaker.period"},
		// failsafe-go would divide by a zero bucket length on every call.
		{PolicyConfig{Breaker: &BreakerConfig{Kind: BreakerTime, Failures: 3, Period: 5 * time.Nanosecond, Delay: time.Second}}, "policies.a.breaker.period"},
		{PolicyConfig{Breaker: &BreakerConfig{Failures: 3, Of: 2, Delay: time.Second}}, "policies.a.breaker.of"},
		{PolicyConfig{Limiter: &LimiterConfig{Min: 2, Max: 1, Initial: 1}}, "policies.a.limiter.max"},
		{PolicyConfig{Limiter: &LimiterConfig{Min: 1, Max: 10, Initial: 11}}, "policies.a.limiter.initial"},
	} {
		var ce *ConfigError
		if err := base(tc.p).Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a *ConfigError on %s", tc.p, err, tc.field)
		}
	}
	c := base(PolicyConfig{})
	c.Policies = map[string]PolicyConfig{"z": {}}
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "policies.z" {
		t.Errorf("policy of an unknown endpoint: %v", err)
	}
}

// flakyDep answers 503 while failing is set, else 200; it counts calls.
func flakyDep(t *testing.T) (url string, failing *atomic.Bool, calls *atomic.Int64) {
	failing, calls = new(atomic.Bool), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, failing, calls
}

func TestBreakerOpensAndSaysSo(t *testing.T) {
	url, failing, calls := flakyDep(t)
	failing.Store(true)
	_, svc := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 4}, Timeout: time.Second,
		Endpoints: TwoEndpoints(url, url),
		Policies:  map[string]PolicyConfig{"a": {Breaker: &BreakerConfig{Failures: 3, Delay: time.Hour}}}})
	c := testClient(t)
	for i := range 3 {
		if r := get(t, c, svc+"/a", nil); r.status != 502 {
			t.Fatalf("call %d: %d, want 502 from the failing dependency", i, r.status)
		}
	}
	r := get(t, c, svc+"/a", nil)
	if r.status != 503 || r.header.Get(rundata.HeaderCircuitOpen) != "a" || r.header.Get(rundata.HeaderBulkheadReject) != "" {
		t.Fatalf("after 3 failures: %d %v, want 503 with %s", r.status, r.header, rundata.HeaderCircuitOpen)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the dependency saw %d calls, want 3: an open breaker does not call", n)
	}
	if r := get(t, c, svc+"/b", nil); r.status != 502 {
		t.Errorf("/b has no breaker: %d, want 502", r.status)
	}
	m := get(t, c, svc+"/metrics", nil).body
	for _, want := range []string{
		`bulkheadlab_breaker_state{dependency="a"} 2`, `bulkheadlab_breaker_rejected_total{dependency="a"} 1`,
		`bulkheadlab_breaker_transitions_total{dependency="a",to="open"} 1`, `bulkheadlab_breaker_opened_at_seconds{dependency="a"} 1.`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(m, `bulkheadlab_breaker_state{dependency="b"}`) {
		t.Error("/b exports breaker metrics without a breaker")
	}
}

func TestRetryRetriesTheConfiguredOutcomes(t *testing.T) {
	url, failing, calls := flakyDep(t)
	failing.Store(true)
	_, svc := startService(t, Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 4}, Timeout: time.Second,
		Endpoints: TwoEndpoints(url, url),
		Policies: map[string]PolicyConfig{
			"a": {Retry: &RetryConfig{Attempts: 3, Backoff: time.Millisecond, Jitter: 0.5, Seed: 1}},
			"b": {Retry: &RetryConfig{Attempts: 3, On: []string{OutcomeRejected}}, RetryAfter: 1500 * time.Millisecond},
		}})
	c := testClient(t)
	r := get(t, c, svc+"/a", nil)
	if r.status != 502 || r.header.Get(rundata.HeaderAttempts) != "3" || calls.Load() != 3 {
		t.Errorf("/a: %d, %s attempts, %d calls; want 502 after 3 attempts", r.status, r.header.Get(rundata.HeaderAttempts), calls.Load())
	}
	r = get(t, c, svc+"/b", nil)
	if r.status != 502 || r.header.Get(rundata.HeaderAttempts) != "1" || r.header.Get(rundata.HeaderRetryAfter) != "" {
		t.Errorf("/b retries only rejections: %d, %s attempts, Retry-After %q; want 502 after 1",
			r.status, r.header.Get(rundata.HeaderAttempts), r.header.Get(rundata.HeaderRetryAfter))
	}
	m := get(t, c, svc+"/metrics", nil).body
	if !strings.Contains(m, `bulkheadlab_retries_total{dependency="a"} 2`) {
		t.Errorf("/metrics lacks 2 retries of a")
	}
}

func TestRefusalsAreToldApart(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer dep.Close()
	_, svc := startService(t, Config{Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 2}, Timeout: 10 * time.Second,
		Endpoints: TwoEndpoints(dep.URL, dep.URL),
		Policies: map[string]PolicyConfig{
			"a": {Bulkhead: BulkheadFailsafe, RetryAfter: 1500 * time.Millisecond},
			"b": {Limiter: &LimiterConfig{Min: 1, Max: 1, Initial: 1}},
		}})
	c := testClient(t)
	done := make(chan reply, 2)
	go func() { done <- get(t, c, svc+"/a", nil) }()
	go func() { done <- get(t, c, svc+"/b", nil) }()
	<-entered
	<-entered // both hold their only permit
	ra, rb := get(t, c, svc+"/a", nil), get(t, c, svc+"/b", nil)
	close(release)
	<-done
	<-done
	if ra.status != 503 || ra.header.Get(rundata.HeaderBulkheadReject) != "full" || ra.header.Get(rundata.HeaderRetryAfter) != "2" {
		t.Errorf("/a (failsafe bulkhead full): %d %v", ra.status, ra.header)
	}
	if rb.status != 503 || rb.header.Get(rundata.HeaderConcurrencyLimit) != "exceeded" || rb.header.Get(rundata.HeaderBulkheadReject) != "" {
		t.Errorf("/b (limiter at its limit of 1): %d %v", rb.status, rb.header)
	}
	m := get(t, c, svc+"/metrics", nil).body
	for _, want := range []string{
		`bulkhead_pool_rejected_total{pool="a",reason="full"} 1`, `bulkhead_pool_limit{pool="a"} 1`,
		`bulkheadlab_limiter_limit{dependency="b"} 1`, `bulkheadlab_limiter_rejected_total{dependency="b"} 1`,
		`bulkhead_pool_limit{pool="b"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(m, `bulkhead_pool_acquired_total{pool="a"}`) {
		t.Error("the project's pool a is exported although failsafe's bulkhead replaced it")
	}
}

// TestLimitNestsInTheSharedPool: a limit of 2 on /a inside a shared pool of
// 6 lets two slow /a calls hold permits and rejects the third at once
// (503 X-Bulkhead-Reject: full), while /b still gets the pool's other
// permits; the nested bulkhead is exported as the pool "a-limit".
func TestLimitNestsInTheSharedPool(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer slow.Close()
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer fast.Close()
	_, svc := startService(t, Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 6}, Timeout: 10 * time.Second,
		Endpoints: TwoEndpoints(slow.URL, fast.URL), Policies: map[string]PolicyConfig{"a": {Limit: 2}}})
	c := testClient(t)
	done := make(chan reply, 2)
	for range 2 {
		go func() { done <- get(t, c, svc+"/a", nil) }()
	}
	<-entered
	<-entered
	ra := get(t, c, svc+"/a", nil)
	rb := get(t, c, svc+"/b", nil)
	m := get(t, c, svc+"/metrics", nil).body
	close(release)
	<-done
	<-done
	if ra.status != 503 || ra.header.Get(rundata.HeaderBulkheadReject) != "full" {
		t.Errorf("third /a beyond the limit of 2: %d %v, want 503 full", ra.status, ra.header)
	}
	if rb.status != 200 {
		t.Errorf("/b with 4 shared permits free: %d", rb.status)
	}
	for _, want := range []string{`bulkhead_pool_in_use{pool="a-limit"} 2`, `bulkhead_pool_limit{pool="a-limit"} 2`,
		`bulkhead_pool_in_use{pool="shared"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
