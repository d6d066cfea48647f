package service

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// stageConfigs are configs with the admission stages, job queue and
// layouts that came after the pools, for the flags' round trip.
func stageConfigs() []Config {
	base := func() Config {
		return Config{Layout: LayoutConfig{Mode: ModeShared, PoolSize: 8, Queue: 2, MaxWait: 40 * time.Millisecond},
			Timeout: 120 * time.Millisecond, Conns: 7, Endpoints: TwoEndpoints("http://127.0.0.1:1", "http://127.0.0.1:2")}
	}
	var out []Config
	add := func(edit func(*Config)) {
		c := base()
		edit(&c)
		out = append(out, c)
	}
	add(func(c *Config) {
		c.Tenants = &TenantConfig{Mode: TenantPartitioned, Header: "X-Customer", Names: []string{"z", "m"},
			Partitions: map[string]int{"noisy": 3, "quiet": 2}, Other: 1}
	})
	add(func(c *Config) { c.Tenants = &TenantConfig{Mode: TenantFairShare, Cap: 2} })
	add(func(c *Config) { c.Tenants = &TenantConfig{Mode: TenantShared} })
	add(func(c *Config) {
		c.Priority = &PriorityConfig{Header: "X-Class", Default: ClassSheddable, Classes: map[string]Class{"b": ClassCritical, "a": ClassSheddable},
			Reserved: map[string]int{SharedPool: 3}}
	})
	add(func(c *Config) { c.Priority = &PriorityConfig{} })
	add(func(c *Config) { c.Jobs = &JobsConfig{Mode: JobsShared, Workers: 3} })
	add(func(c *Config) { c.Jobs = &JobsConfig{Mode: JobsOwn, Workers: 2, Queue: 50, Dependency: "b"} })
	add(func(c *Config) {
		c.Layout.Mode, c.RequestStateBytes, c.MaxHeapBytes = ModeUnbounded, 4096, 64<<20
	})
	add(func(c *Config) { c.MaxHeapBytes = 1000 })
	add(func(c *Config) {
		c.Layout = LayoutConfig{Mode: ModeRateLimit, PoolSize: 20, Queue: 20, MaxWait: 5 * time.Millisecond, Rate: 12.5, Rates: map[string]float64{"b": 0.25}}
	})
	return out
}

// parseServe parses args as the service's flags.
func parseServe(t *testing.T, args []string) (Config, error) {
	t.Helper()
	var f ServeFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Config()
}

// checkField reports err unless it is a *ConfigError on field, or nil when
// field is "".
func checkField(t *testing.T, what any, err error, field string) {
	t.Helper()
	var ce *ConfigError
	switch {
	case field == "" && err != nil:
		t.Errorf("%+v: %v, want valid", what, err)
	case field != "" && (!errors.As(err, &ce) || ce.Field != field):
		t.Errorf("%+v: %v, want a ConfigError on %s", what, err, field)
	}
}

// TestServeArgsRoundTripStages: a config with the newer stages rendered as
// flags and parsed back is the same config.
func TestServeArgsRoundTripStages(t *testing.T) {
	for _, want := range stageConfigs() {
		got, err := parseServe(t, ServeArgs(want))
		if err != nil {
			t.Fatalf("Config of %v: %v", ServeArgs(want), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %v:\n got %+v\nwant %+v", ServeArgs(want), got, want)
		}
	}
}

// TestServeFlagsStageErrors: the newer stages' config errors name their
// flag (and the name a keyed entry is about).
func TestServeFlagsStageErrors(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--tenant-cap", "2"}, "--tenant-mode: must be"},
		{[]string{"--tenant-mode", "fair-share"}, "--tenant-cap: must be between 1"},
		{[]string{"--tenant-mode", "partitioned", "--tenant-partitions", "a=1,Q=1", "--tenant-other", "1"}, `--tenant-partitions: Q: tenant name "Q"`},
		{[]string{"--tenant-mode", "partitioned", "--tenant-partitions", "a=1,b"}, "--tenant-partitions: entry"},
		{[]string{"--priority-reserved", "shared=99"}, "--priority-reserved: pool shared: must be between 0"},
		{[]string{"--priority-class", "a=low"}, "--priority-class: a: class must be"},
		{[]string{"--priority-class", "a"}, "--priority-class: \"a\" is not NAME=CLASS"},
		{[]string{"--priority-default", "low"}, "--priority-default: class must be"},
		{[]string{"--jobs-workers", "2"}, "--jobs-mode: must be"},
		{[]string{"--mode", "ratelimit"}, "--rate: must be between 0.001"},
		{[]string{"--mode", "ratelimit", "--rate", "5", "--rates", "a=0"}, "--rates: a: must be between"},
		{[]string{"--mode", "ratelimit", "--rate", "5", "--rates", "c=1"}, `--rates: no endpoint "c"`},
		{[]string{"--mode", "ratelimit", "--rates", "a=x"}, "--rates: entry"},
		{[]string{"--rate", "5"}, "--rate: only applies to ratelimit mode"},
		{[]string{"--max-heap", "12 bananas"}, `--max-heap: invalid size "12 bananas"`},
		{[]string{"--max-heap", "-1GiB"}, `--max-heap: invalid size "-1GiB"`},
		{[]string{"--request-state-bytes", "-1"}, "--request-state-bytes: must be between 0"},
		{[]string{"--mode", "unbounded", "--pool-sizes", "a=1,b=1"}, "--pool-sizes: only applies to bulkhead mode"},
		{[]string{"--mode", "unbounded", "--policy", `a={}`}, "--policy: a: a policy stack's bulkhead stage"},
		{[]string{"--mode", "unbounded", "--priority"}, "--priority-reserved: reserves permits of pools"},
		{[]string{"--jobs-mode", "own"}, "--jobs-workers: must be between 1"},
		{[]string{"--jobs-mode", "own", "--jobs-workers", "1", "--jobs-dependency", "c"}, `--jobs-dependency: no endpoint "c"`},
	} {
		_, err := parseServe(t, append([]string{"--mode", "shared", "--dep-a", "http://127.0.0.1:1", "--dep-b", "http://127.0.0.1:2"}, tt.args...))
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("serve %v: %v, want a *FlagError starting %q", tt.args, err, tt.wantErr)
		}
	}
}
