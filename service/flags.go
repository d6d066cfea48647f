package service

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/bytesize"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"github.com/spf13/pflag"
)

// The command-line flags of the service and the dependency stub live here,
// next to the configs they set, so that their names, defaults and the
// mapping of config errors to flags have one home: the CLI binds and parses
// them with ServeFlags and DepFlags, and a launcher that starts the
// components as processes renders a config back into flags with ServeArgs
// and DepArgs.

// DefectFlag is the hidden serve flag that sets the deliberate TEST FAULT
// LayoutConfig.BrokenSharedBulkhead; BurnFlag sets Config.BurnCPU;
// ServeDefectFlag (repeatable, a Defect's name each time) adds to
// Config.Defects.
const (
	DefectFlag      = "test-defect-shared-semaphore"
	BurnFlag        = "test-defect-burn-cpu"
	ServeDefectFlag = "defect"
)

// FlagError is a command-line error naming the flag.
type FlagError struct {
	Flag string // e.g. "--pool-size"
	Msg  string
}

func (e *FlagError) Error() string { return e.Flag + ": " + e.Msg }

// Unwrap returns ErrInvalidConfig.
func (e *FlagError) Unwrap() error { return ErrInvalidConfig }

// ServeFlags are the flags of the service (`bulkheadlab serve`). Bind them,
// parse the flag set, then call Config.
type ServeFlags struct {
	cfg                     Config
	mode, poolSizes, queues string
	connsLayout             string
	depA, depB              string
	endpoints               []string
	groups                  []string
	queries                 []string
	policies                []string
	defects                 []string
	tenants                 tenantFlags
	priority                priorityFlags
	jobs                    jobsFlags
	maxHeap                 string
	rates                   string
	// origin maps an endpoint name to the flag that gave it.
	origin map[string]string
}

// Bind defines the service's flags on fs with this package's defaults.
func (f *ServeFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "mode", string(ModeBulkhead), "pool layout: shared, bulkhead, unbounded (no pool: nothing bounds the calls in flight) or ratelimit (no pool: a rate limit per dependency, --rate)")
	fs.IntVar(&f.cfg.Layout.PoolSize, "pool-size", DefaultPoolSize, "P: shared pool size, or the total split among the pools in bulkhead mode")
	fs.StringVar(&f.poolSizes, "pool-sizes", "", "explicit bulkhead sizes per pool (an endpoint's, or a --pool-group's), e.g. a=10,b=10 (bulkhead mode only)")
	fs.IntVar(&f.cfg.Layout.Queue, "queue", DefaultQueue, "Q: shared queue length, or the total split among the pools in bulkhead mode")
	fs.StringVar(&f.queues, "queues", "", "explicit bulkhead queue lengths per pool, e.g. a=10,b=10 (bulkhead mode only)")
	fs.StringArrayVar(&f.groups, "pool-group", nil, "a pool shared by several endpoints, NAME=E1,E2 (repeatable; bulkhead mode only): they draw from one pool NAME, every other endpoint from its own")
	fs.DurationVar(&f.cfg.Layout.MaxWait, "max-wait", DefaultTimeout, "longest wait in a pool's queue")
	fs.DurationVar(&f.cfg.Timeout, "timeout", DefaultTimeout, "T: timeout of each dependency call")
	fs.IntVar(&f.cfg.Conns, "conns", DefaultConns, "connections per dependency, or in all with --conns-layout shared")
	fs.StringVar(&f.connsLayout, "conns-layout", "", "connection pools: per-dependency (one pool of --conns per dependency; the default) or shared (one pool of --conns for all dependencies)")
	fs.StringArrayVar(&f.endpoints, "endpoint", nil, "an endpoint and its dependency's URL, NAME=URL (repeatable; GET /NAME calls URL)")
	fs.StringArrayVar(&f.queries, "query", nil, "an endpoint's query, NAME=SQL (repeatable): GET /NAME runs SQL on the PostgreSQL at its URL (postgres://...) instead of a GET")
	fs.StringVar(&f.depA, "dep-a", "", "URL of dependency A: shorthand for --endpoint a=URL")
	fs.StringVar(&f.depB, "dep-b", "", "URL of dependency B: shorthand for --endpoint b=URL")
	fs.StringArrayVar(&f.policies, "policy", nil, `an endpoint's policy stack, NAME=JSON (repeatable), e.g. a={"breaker":{"failures":5,"delay":"1s"}}`)
	fs.BoolVar(&f.cfg.Layout.BrokenSharedBulkhead, DefectFlag, false,
		"TEST FAULT: in bulkhead mode route every endpoint to one semaphore (proves the CI check can fail)")
	_ = fs.MarkHidden(DefectFlag)
	fs.Int64Var(&f.cfg.MaxBodyBytes, "max-body-bytes", 0, fmt.Sprintf("longest dependency body: a longer one fails the call (502) instead of being truncated (0: %d)", DefaultMaxBodyBytes))
	fs.IntVar(&f.cfg.GOMAXPROCS, "gomaxprocs", 0, "CPUs the service may run Go code on at once (runtime.GOMAXPROCS; 0: the runtime's default)")
	fs.IntVar(&f.cfg.BurnCPU, BurnFlag, 0, "TEST FAULT: keep N goroutines spinning (a starved service)")
	_ = fs.MarkHidden(BurnFlag)
	f.tenants.bind(fs)
	f.priority.bind(fs)
	f.jobs.bind(fs)
	fs.Float64Var(&f.cfg.Layout.Rate, "rate", 0, "ratelimit mode: each dependency's rate limit, in calls per second (a call waits up to --max-wait for its turn)")
	fs.StringVar(&f.rates, "rates", "", "ratelimit mode: rate limits per endpoint, e.g. a=50,b=200.5")
	fs.IntVar(&f.cfg.RequestStateBytes, "request-state-bytes", 0, "bytes of state each dependency call holds until it returns (a request's memory while it awaits; 0: none)")
	fs.StringVar(&f.maxHeap, "max-heap", "", "heap ceiling, e.g. 512MiB: at or past it every request is refused at once (503) rather than allocate more (unset: none)")
	fs.StringArrayVar(&f.defects, ServeDefectFlag, nil, "TEST DEFECT: switch on a defect by name (repeatable): "+defectList())
	_ = fs.MarkHidden(ServeDefectFlag)
}

// Config returns the validated configuration the parsed flags describe.
// Errors are *FlagError naming the flag.
func (f *ServeFlags) Config() (Config, error) {
	c := f.cfg
	m, err := ParseMode(f.mode)
	if err != nil {
		return Config{}, &FlagError{Flag: "--mode", Msg: configMsg(err)}
	}
	c.Layout.Mode = m
	if c.Layout.PoolSizes, err = ParseSizes(f.poolSizes); err != nil {
		return Config{}, &FlagError{Flag: "--pool-sizes", Msg: err.Error()}
	}
	if c.Layout.Queues, err = ParseSizes(f.queues); err != nil {
		return Config{}, &FlagError{Flag: "--queues", Msg: err.Error()}
	}
	if c.Layout.Groups, err = ParseGroups(f.groups); err != nil {
		return Config{}, &FlagError{Flag: "--pool-group", Msg: err.Error()}
	}
	if f.connsLayout != "" {
		if c.ConnsLayout, err = ParseConnsLayout(f.connsLayout); err != nil {
			return Config{}, &FlagError{Flag: "--conns-layout", Msg: configMsg(err)}
		}
	}
	if c.Conns < 1 {
		return Config{}, &FlagError{Flag: "--conns", Msg: fmt.Sprintf("must be at least 1, got %d", c.Conns)}
	}
	f.origin = map[string]string{}
	if f.depA != "" || f.depB != "" || len(f.endpoints) == 0 {
		c.Endpoints = TwoEndpoints(f.depA, f.depB)
		f.origin[EndpointA], f.origin[EndpointB] = "--dep-a", "--dep-b"
	}
	for _, e := range f.endpoints {
		name, u, ok := strings.Cut(e, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return Config{}, &FlagError{Flag: "--endpoint", Msg: fmt.Sprintf("%q is not NAME=URL (example: a=http://127.0.0.1:9001)", e)}
		}
		c.Endpoints = append(c.Endpoints, Endpoint{Name: strings.TrimSpace(name), URL: strings.TrimSpace(u)})
	}
	for _, q := range f.queries {
		name, sql, ok := strings.Cut(q, "=")
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(c.Endpoints, func(e Endpoint) bool { return e.Name == name })
		switch {
		case !ok || name == "" || strings.TrimSpace(sql) == "":
			return Config{}, &FlagError{Flag: "--query", Msg: fmt.Sprintf("%q is not NAME=SQL (example: a='SELECT 1')", q)}
		case i < 0:
			return Config{}, &FlagError{Flag: "--query", Msg: fmt.Sprintf("%q: no endpoint %q (give it with --endpoint %s=postgres://...)", q, name, name)}
		case c.Endpoints[i].Query != "":
			return Config{}, &FlagError{Flag: "--query", Msg: fmt.Sprintf("endpoint %q has two queries", name)}
		}
		c.Endpoints[i].Query = sql
	}
	if c.Policies, err = ParsePolicies(f.policies); err != nil {
		return Config{}, &FlagError{Flag: "--policy", Msg: err.Error()}
	}
	if c.Tenants, err = f.tenants.config(); err != nil {
		return Config{}, err
	}
	if c.Priority, err = f.priority.config(); err != nil {
		return Config{}, err
	}
	c.Jobs = f.jobs.config()
	if c.Layout.Rates, err = ParseRates(f.rates); err != nil {
		return Config{}, &FlagError{Flag: "--rates", Msg: err.Error()}
	}
	if f.maxHeap != "" {
		if c.MaxHeapBytes, err = bytesize.Parse(f.maxHeap); err != nil {
			return Config{}, &FlagError{Flag: "--max-heap", Msg: err.Error()}
		}
	}
	for _, d := range f.defects {
		c.Defects = append(c.Defects, Defect(strings.TrimSpace(d))) // Validate names an unknown one
	}
	if err := c.Validate(); err != nil {
		return Config{}, f.flagError(err)
	}
	return c, nil
}

// serveFlagOf maps Config field names (before any ".name" suffix) to flags.
var serveFlagOf = map[string]string{
	"mode": "--mode", "pool_size": "--pool-size", "pool_sizes": "--pool-sizes", "queue": "--queue",
	"queues": "--queues", "pool_groups": "--pool-group", "max_wait": "--max-wait", "timeout": "--timeout", "conns": "--conns", "conns_layout": "--conns-layout",
	"endpoints": "--endpoint", "burn_cpu": "--" + BurnFlag, "policies": "--policy",
	"defects": "--" + ServeDefectFlag, "priority_classes": "--priority-class",
}

// flagError maps a *ConfigError to the flag that sets its field.
func (f *ServeFlags) flagError(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	field, sub, _ := strings.Cut(ce.Field, ".")
	flag, ok := serveFlagOf[field]
	if !ok {
		flag = "--" + strings.ReplaceAll(field, "_", "-")
	}
	switch {
	case field == "endpoints" && f.origin[sub] != "":
		return &FlagError{Flag: f.origin[sub], Msg: ce.Msg}
	case (field == "endpoints" || field == "policies" || field == "pool_groups" || keyedByName[field]) && sub != "":
		return &FlagError{Flag: flag, Msg: sub + ": " + ce.Msg}
	case sub != "":
		return &FlagError{Flag: flag, Msg: "pool " + sub + ": " + ce.Msg}
	}
	return &FlagError{Flag: flag, Msg: ce.Msg}
}

// keyedByName are the fields keyed by a name that is not a pool's (a
// tenant's, an endpoint's): their errors say the name, not "pool NAME".
var keyedByName = map[string]bool{"tenant_partitions": true, "priority_classes": true, "rates": true}

func configMsg(err error) string {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Msg
	}
	return err.Error()
}

// ServeArgs renders c as the service's flags (without --listen): Bind,
// parse and Config of the result give back c.
func ServeArgs(c Config) []string {
	l := c.Layout
	args := []string{
		"--mode", string(l.Mode),
		"--pool-size", strconv.Itoa(l.PoolSize),
		"--queue", strconv.Itoa(l.Queue),
		"--max-wait", l.MaxWait.String(),
		"--timeout", c.Timeout.String(),
		"--conns", strconv.Itoa(c.Conns),
	}
	if c.ConnsLayout != "" {
		args = append(args, "--conns-layout", string(c.ConnsLayout))
	}
	names := c.EndpointNames()
	for _, g := range sortedKeys(l.Groups) {
		args = append(args, "--pool-group", g+"="+strings.Join(l.Groups[g], ","))
	}
	// Sizes are keyed by pool: an endpoint's name or a group's.
	pools := append(slices.Clone(names), sortedKeys(l.Groups)...)
	if l.PoolSizes != nil {
		args = append(args, "--pool-sizes", FormatSizes(l.PoolSizes, withRest(pools, l.PoolSizes)))
	}
	if l.Queues != nil {
		args = append(args, "--queues", FormatSizes(l.Queues, withRest(pools, l.Queues)))
	}
	for _, e := range c.Endpoints {
		args = append(args, "--endpoint", e.Name+"="+e.URL)
	}
	for _, e := range c.Endpoints {
		if e.Query != "" {
			args = append(args, "--query", e.Name+"="+e.Query)
		}
	}
	args = append(args, PolicyArgs(c.Policies, names)...)
	if l.Rate != 0 {
		args = append(args, "--rate", strconv.FormatFloat(l.Rate, 'g', -1, 64))
	}
	if len(l.Rates) > 0 {
		parts := make([]string, 0, len(l.Rates))
		for _, e := range sortedKeys(l.Rates) {
			parts = append(parts, e+"="+strconv.FormatFloat(l.Rates[e], 'g', -1, 64))
		}
		args = append(args, "--rates", strings.Join(parts, ","))
	}
	args = append(args, tenantArgs(c.Tenants)...)
	args = append(args, priorityArgs(c.Priority, names)...)
	args = append(args, jobsArgs(c.Jobs)...)
	if c.RequestStateBytes != 0 {
		args = append(args, "--request-state-bytes", strconv.Itoa(c.RequestStateBytes))
	}
	if c.MaxHeapBytes != 0 {
		args = append(args, "--max-heap", bytesize.Format(c.MaxHeapBytes))
	}
	if l.BrokenSharedBulkhead {
		args = append(args, "--"+DefectFlag)
	}
	if c.MaxBodyBytes != 0 {
		args = append(args, "--max-body-bytes", strconv.FormatInt(c.MaxBodyBytes, 10))
	}
	if c.GOMAXPROCS > 0 {
		args = append(args, "--gomaxprocs", strconv.Itoa(c.GOMAXPROCS))
	}
	if c.BurnCPU > 0 {
		args = append(args, "--"+BurnFlag, strconv.Itoa(c.BurnCPU))
	}
	for _, d := range c.Defects {
		args = append(args, "--"+ServeDefectFlag, string(d))
	}
	return args
}

// tenantFlags are the flags of the tenant stage (Config.Tenants).
type tenantFlags struct {
	mode, header, names, partitions string
	other, cap                      int
}

func (f *tenantFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "tenant-mode", "", "tenant stage: shared (count per tenant), partitioned (--tenant-partitions and --tenant-other) or fair-share (--tenant-cap); unset: none")
	fs.StringVar(&f.header, "tenant-header", "", "header that names a request's tenant (default "+DefaultTenantHeader+"; none: tenant "+DefaultTenant+")")
	fs.StringVar(&f.names, "tenants", "", "tenants with metric labels of their own, e.g. noisy,quiet (every other is labelled "+OtherTenants+")")
	fs.StringVar(&f.partitions, "tenant-partitions", "", "partitioned: the named tenants' partitions, e.g. noisy=4,quiet=4")
	fs.IntVar(&f.other, "tenant-other", 0, "partitioned: the partition of every tenant not in --tenant-partitions")
	fs.IntVar(&f.cap, "tenant-cap", 0, "fair-share: the most requests one tenant may have in the service at once")
}

// config returns the tenant stage the flags describe, nil for none.
func (f *tenantFlags) config() (*TenantConfig, error) {
	if f.mode == "" && f.header == "" && f.names == "" && f.partitions == "" && f.other == 0 && f.cap == 0 {
		return nil, nil
	}
	tc := &TenantConfig{Mode: TenantMode(f.mode), Header: f.header, Other: f.other, Cap: f.cap}
	if f.names != "" {
		for _, n := range strings.Split(f.names, ",") {
			tc.Names = append(tc.Names, strings.TrimSpace(n))
		}
	}
	var err error
	if tc.Partitions, err = ParseSizes(f.partitions); err != nil {
		return nil, &FlagError{Flag: "--tenant-partitions", Msg: err.Error()}
	}
	return tc, nil
}

// tenantArgs renders tc as the tenant flags.
func tenantArgs(tc *TenantConfig) []string {
	if tc == nil {
		return nil
	}
	args := []string{"--tenant-mode", string(tc.Mode)}
	if tc.Header != "" {
		args = append(args, "--tenant-header", tc.Header)
	}
	if len(tc.Names) > 0 {
		args = append(args, "--tenants", strings.Join(tc.Names, ","))
	}
	if len(tc.Partitions) > 0 {
		args = append(args, "--tenant-partitions", FormatSizes(tc.Partitions, sortedKeys(tc.Partitions)))
	}
	if tc.Other != 0 {
		args = append(args, "--tenant-other", strconv.Itoa(tc.Other))
	}
	if tc.Cap != 0 {
		args = append(args, "--tenant-cap", strconv.Itoa(tc.Cap))
	}
	return args
}

// priorityFlags are the flags of the priority stage (Config.Priority).
type priorityFlags struct {
	on                    bool
	header, def, reserved string
	classes               []string
}

func (f *priorityFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "priority", false, "a priority stage: each request's class, and the permits reserved for critical calls (implied by every --priority-* flag)")
	fs.StringVar(&f.header, "priority-header", "", "header that names a request's class, critical or sheddable (default "+DefaultPriorityHeader+")")
	fs.StringVar(&f.def, "priority-default", "", "class of a request without the header (default critical)")
	fs.StringArrayVar(&f.classes, "priority-class", nil, "an endpoint's fixed class, NAME=CLASS (repeatable): its requests' header is ignored")
	fs.StringVar(&f.reserved, "priority-reserved", "", "permits of each pool reserved for critical calls, e.g. shared=4: sheddable ones hold at most the rest")
}

// config returns the priority stage the flags describe, nil for none.
func (f *priorityFlags) config() (*PriorityConfig, error) {
	if !f.on && f.header == "" && f.def == "" && f.reserved == "" && len(f.classes) == 0 {
		return nil, nil
	}
	pc := &PriorityConfig{Header: f.header, Default: Class(f.def)}
	var err error
	if pc.Reserved, err = ParseSizes(f.reserved); err != nil {
		return nil, &FlagError{Flag: "--priority-reserved", Msg: err.Error()}
	}
	for _, v := range f.classes {
		name, class, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, &FlagError{Flag: "--priority-class", Msg: fmt.Sprintf("%q is not NAME=CLASS (example: checkout=critical)", v)}
		}
		if pc.Classes == nil {
			pc.Classes = map[string]Class{}
		}
		if _, dup := pc.Classes[name]; dup {
			return nil, &FlagError{Flag: "--priority-class", Msg: fmt.Sprintf("endpoint %q is given twice", name)}
		}
		pc.Classes[name] = Class(strings.TrimSpace(class))
	}
	return pc, nil
}

// priorityArgs renders pc as the priority flags, the classes in the order
// of the endpoints' names.
func priorityArgs(pc *PriorityConfig, names []string) []string {
	if pc == nil {
		return nil
	}
	args := []string{"--priority"}
	if pc.Header != "" {
		args = append(args, "--priority-header", pc.Header)
	}
	if pc.Default != "" {
		args = append(args, "--priority-default", string(pc.Default))
	}
	for _, n := range names {
		if c, ok := pc.Classes[n]; ok {
			args = append(args, "--priority-class", n+"="+string(c))
		}
	}
	if pc.Reserved != nil {
		args = append(args, "--priority-reserved", FormatSizes(pc.Reserved, sortedKeys(pc.Reserved)))
	}
	return args
}

// jobsFlags are the flags of the job queue (Config.Jobs).
type jobsFlags struct {
	mode, dep      string
	workers, queue int
}

func (f *jobsFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.mode, "jobs-mode", "", "a job queue (POST /jobs?n=K&dependency=NAME) whose jobs run on the request pools (shared) or on --jobs-workers of their own (own); unset: none")
	fs.IntVar(&f.workers, "jobs-workers", 0, "the most jobs that run at once")
	fs.IntVar(&f.queue, "jobs-queue", 0, fmt.Sprintf("the most jobs that may wait (0: %d)", DefaultJobsQueue))
	fs.StringVar(&f.dep, "jobs-dependency", "", "the endpoint whose dependency a job calls when the POST names none (default: the first)")
}

// config returns the job queue the flags describe, nil for none.
func (f *jobsFlags) config() *JobsConfig {
	if f.mode == "" && f.dep == "" && f.workers == 0 && f.queue == 0 {
		return nil
	}
	return &JobsConfig{Mode: JobsMode(f.mode), Workers: f.workers, Queue: f.queue, Dependency: f.dep}
}

// jobsArgs renders jc as the job queue's flags.
func jobsArgs(jc *JobsConfig) []string {
	if jc == nil {
		return nil
	}
	args := []string{"--jobs-mode", string(jc.Mode), "--jobs-workers", strconv.Itoa(jc.Workers)}
	if jc.Queue != 0 {
		args = append(args, "--jobs-queue", strconv.Itoa(jc.Queue))
	}
	if jc.Dependency != "" {
		args = append(args, "--jobs-dependency", jc.Dependency)
	}
	return args
}

// ParseRates parses a per-endpoint list of rates such as "a=50,b=0.5"
// into a map; an empty string gives a nil map. Which names and rates are
// allowed is the layout's business.
func ParseRates(s string) (map[string]float64, error) {
	return parsePairs(s, "name=rate (example: a=50,b=200)", "the rate must be a number of calls per second", func(v string) (float64, bool) {
		r, err := strconv.ParseFloat(v, 64)
		return r, err == nil
	})
}

// ParseSizes parses a per-pool list such as "a=10,b=10" into a map. An
// empty string gives a nil map. Values must be non-negative integers; names
// must be unique. Which names are allowed is the layout's business.
func ParseSizes(s string) (map[string]int, error) {
	return parsePairs(s, "name=value (example: a=10,b=10)", "value must be a non-negative integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	})
}

// parsePairs parses a list of name=value entries, each value read by
// parse, into a map (nil for an empty s); form and bad describe an entry
// and a bad value in the errors.
func parsePairs[V any](s, form, bad string, parse func(string) (V, bool)) (map[string]V, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]V{}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("entry %q is not %s", part, form)
		}
		v, ok := parse(val)
		if !ok {
			return nil, fmt.Errorf("entry %q: %s", part, bad)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("entry %q: %s given twice", part, name)
		}
		out[name] = v
	}
	return out, nil
}

// ParseGroups parses the values of --pool-group, each NAME=E1,E2, into
// LayoutConfig.Groups; none gives a nil map. A name may be given once and
// an endpoint once per group; which names are allowed is the layout's
// business (NAME= is a group without endpoints, which it refuses).
func ParseGroups(values []string) (map[string][]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for _, v := range values {
		name, list, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME=ENDPOINT,ENDPOINT (example: core=checkout,cart)", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("pool group %q is given twice", name)
		}
		members := []string{}
		if strings.TrimSpace(list) != "" {
			for _, e := range strings.Split(list, ",") {
				e = strings.TrimSpace(e)
				if e == "" {
					return nil, fmt.Errorf("%q: an empty endpoint name (example: core=checkout,cart)", v)
				}
				members = append(members, e)
			}
		}
		out[name] = members
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// withRest returns names followed by m's other keys in order, so that
// FormatSizes renders every entry of m.
func withRest(names []string, m map[string]int) []string {
	out := slices.Clone(names)
	for _, k := range sortedKeys(m) {
		if !slices.Contains(names, k) {
			out = append(out, k)
		}
	}
	return out
}

// FormatSizes renders m as ParseSizes reads it, in the order of names.
func FormatSizes(m map[string]int, names []string) string {
	parts := make([]string, 0, len(m))
	for _, n := range names {
		if v, ok := m[n]; ok {
			parts = append(parts, n+"="+strconv.Itoa(v))
		}
	}
	return strings.Join(parts, ",")
}

// Defaults of the dependency stub (docs/design.md §5).
const (
	DefaultDepLatency = 10 * time.Millisecond
	DefaultDepJitter  = 2 * time.Millisecond
	DefaultDepSize    = 64
)

// DepFlags are the flags of the dependency stub (`bulkheadlab dep`).
type DepFlags struct{ cfg DepConfig }

// Bind defines the stub's flags on fs with this package's defaults.
func (f *DepFlags) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.cfg.Name, "name", "A", "name of this dependency (in the announcement)")
	fs.DurationVar(&f.cfg.Latency, "latency", DefaultDepLatency, "base latency of every response")
	fs.DurationVar(&f.cfg.Jitter, "jitter", DefaultDepJitter, "uniform jitter around the latency")
	fs.Uint64Var(&f.cfg.Seed, "seed", 1, "seed of the jitter's random source")
	fs.IntVar(&f.cfg.Size, "size", DefaultDepSize, "response body size in bytes")
	fs.IntVar(&f.cfg.Payload, "payload", 0, "answer a JSON document of about this many bytes (an array of small records) instead of --size bytes of text (0: off)")
	fs.IntVar(&f.cfg.Capacity, "capacity", 0, "requests served at once; the others wait in FIFO order (0: unlimited)")
	fs.IntVar(&f.cfg.Queue, "queue", 0, fmt.Sprintf("requests that may wait for a slot with --capacity, beyond which 503 with %s (0: up to %d)", rundata.HeaderDepOverloaded, MaxDepQueue))
}

// Config returns the validated configuration the parsed flags describe.
// Errors are *FlagError naming the flag.
func (f *DepFlags) Config() (DepConfig, error) {
	if err := f.cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return DepConfig{}, &FlagError{Flag: "--" + ce.Field, Msg: ce.Msg}
		}
		return DepConfig{}, err
	}
	return f.cfg, nil
}

// DepArgs renders c as the stub's flags (without --listen): Bind, parse
// and Config of the result give back c. A stub of unlimited capacity gets
// no capacity flags, so its command line is what it was before they
// existed.
func DepArgs(c DepConfig) []string {
	args := []string{"--name", c.Name, "--latency", c.Latency.String(), "--jitter", c.Jitter.String(),
		"--seed", strconv.FormatUint(c.Seed, 10), "--size", strconv.Itoa(c.Size)}
	if c.Payload != 0 {
		args = append(args, "--payload", strconv.Itoa(c.Payload))
	}
	if c.Capacity != 0 {
		args = append(args, "--capacity", strconv.Itoa(c.Capacity))
	}
	if c.Queue != 0 {
		args = append(args, "--queue", strconv.Itoa(c.Queue))
	}
	return args
}
