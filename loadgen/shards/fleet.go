package shards

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// Defaults of Fleet.
const (
	DefaultLead   = 300 * time.Millisecond
	DefaultStall  = 5 * time.Second
	DefaultProbes = 8
	// DefaultCallTimeout bounds each call but the start's stream.
	DefaultCallTimeout = 30 * time.Second
)

// Endpoint is one shard as the runner reaches it: a base URL (a loopback
// address, or a pod through the API server's proxy) and its client.
type Endpoint struct {
	// Name labels the shard in errors ("shard-2", a pod's name).
	Name string
	URL  string
	// Client is nil for http.DefaultClient's transport (no timeout: the
	// stream lasts the run).
	Client *http.Client
}

// Fleet is a loadgen.Remote that drives shard Agents over HTTP. Its
// fields are read once per run.
type Fleet struct {
	Endpoints []Endpoint
	// Version must equal every Agent's (Protocol in production).
	Version string
	// Lead is the least time between the release decision and t0; it grows
	// to three times the slowest round trip. 0 means DefaultLead.
	Lead time.Duration
	// Stall: a shard that sends nothing for this long (it sends a batch
	// about every 50 ms, empty or not) has failed. 0 means DefaultStall.
	Stall time.Duration
	// Probes is the number of clock exchanges per shard; 0 means
	// DefaultProbes.
	Probes int
	// Token is the run's secret the shards ask for (Agent.Token); it goes
	// in every request's Authorization header.
	Token string
}

var _ loadgen.Remote = (*Fleet)(nil)

// Count is the number of shards.
func (f *Fleet) Count() int { return len(f.Endpoints) }

// ErrShard is wrapped by the errors that name a shard.
var ErrShard = errors.New("shard")

func (f *Fleet) client(e Endpoint) *http.Client {
	return ctlauth.Client(e.Client, f.Token)
}

// call makes one request and decodes a 200's JSON answer into out.
func (f *Fleet) call(ctx context.Context, e Endpoint, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(e.URL, "/")+path, body)
	if err != nil {
		return err
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client(e).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// prepared is one shard, armed, with its clock measured.
type prepared struct {
	offset, offsetErr time.Duration
}

// Run implements loadgen.Remote.
func (f *Fleet) Run(ctx context.Context, cfg loadgen.Config, started func(time.Time), deliver func(int, []byte) error) ([]loadgen.ShardResult, error) {
	n := len(f.Endpoints)
	if n == 0 {
		return nil, errors.New("shards: no shard")
	}
	cfgs := loadgen.Shards(cfg, n)
	preps := make([]prepared, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, e := range f.Endpoints {
		wg.Go(func() {
			p, err := f.prepare(ctx, i, e, cfgs[i])
			preps[i], errs[i] = p, err
			if err != nil {
				errs[i] = fmt.Errorf("%w %d (%s): %w", ErrShard, i, e.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		f.disarm(ctx)
		return nil, err
	}
	worst := time.Duration(0)
	for _, p := range preps {
		worst = max(worst, 2*p.offsetErr)
	}
	t0 := time.Now().Add(max(orDefault(f.Lead, DefaultLead), 3*worst))
	started(t0)

	results := make([]loadgen.ShardResult, n)
	for i, e := range f.Endpoints {
		wg.Go(func() {
			res := f.stream(ctx, i, e, t0.Add(preps[i].offset), deliver)
			res.Offset, res.OffsetError = preps[i].offset, preps[i].offsetErr
			results[i] = res
		})
	}
	wg.Wait()
	return results, nil
}

// prepare checks a shard, measures its clock and arms it with cfg.
func (f *Fleet) prepare(ctx context.Context, i int, e Endpoint, cfg loadgen.Config) (prepared, error) {
	var hello Hello
	if err := f.call(ctx, e, http.MethodGet, "/hello", nil, &hello); err != nil {
		return prepared{}, err
	}
	switch {
	case hello.Version != f.Version:
		return prepared{}, fmt.Errorf("it is version %q, the runner %q", hello.Version, f.Version)
	case hello.Index >= 0 && hello.Index != i:
		return prepared{}, fmt.Errorf("it says it is shard %d", hello.Index)
	}
	var p prepared
	best := time.Duration(-1)
	for range max(1, orInt(f.Probes, DefaultProbes)) {
		var c clockAnswer
		sent := time.Now()
		if err := f.call(ctx, e, http.MethodGet, "/clock", nil, &c); err != nil {
			return prepared{}, err
		}
		rtt := time.Since(sent)
		if best < 0 || rtt < best {
			best = rtt
			mid := sent.Add(rtt / 2)
			p.offset, p.offsetErr = time.Unix(0, c.Now).Sub(mid), rtt/2
		}
	}
	b, err := loadgen.MarshalShard(cfg)
	if err != nil {
		return prepared{}, err
	}
	var armed map[string]int64
	if err := f.call(ctx, e, http.MethodPost, "/arm", armRequest{Version: f.Version, Config: b}, &armed); err != nil {
		return prepared{}, err
	}
	return p, nil
}

// disarm disarms every shard, best effort: after a failed release some
// may be armed, and an armed shard takes no other arm.
func (f *Fleet) disarm(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, e := range f.Endpoints {
		wg.Go(func() {
			var out map[string]bool
			_ = f.call(ctx, e, http.MethodPost, "/disarm", struct{}{}, &out)
		})
	}
	wg.Wait()
}

// stream starts shard i at t0 (its clock) and delivers its batches until
// its report.
func (f *Fleet) stream(ctx context.Context, i int, e Endpoint, t0 time.Time, deliver func(int, []byte) error) loadgen.ShardResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b, _ := json.Marshal(startRequest{T0: t0.UnixNano()})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(e.URL, "/")+"/start", bytes.NewReader(b))
	if err != nil {
		return loadgen.ShardResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	stall := orDefault(f.Stall, DefaultStall)
	watchdog := time.AfterFunc(stall+time.Until(t0), func() {
		cancel(fmt.Errorf("it sent nothing for %v", stall))
	})
	defer watchdog.Stop()
	resp, err := f.client(e).Do(req)
	if err != nil {
		return loadgen.ShardResult{Err: causeOr(ctx, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return loadgen.ShardResult{Err: fmt.Errorf("start: %s: %s", resp.Status, strings.TrimSpace(string(msg)))}
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var buf []byte
	for {
		typ, payload, err := readFrame(r, buf)
		if err != nil {
			if err == io.EOF {
				err = errors.New("its stream ended without a report")
			}
			return loadgen.ShardResult{Err: causeOr(ctx, err)}
		}
		buf = payload[:0]
		watchdog.Reset(stall)
		switch typ {
		case frameBatch:
			if err := deliver(i, payload); err != nil {
				return loadgen.ShardResult{Err: err}
			}
		case frameError:
			return loadgen.ShardResult{Err: errors.New(string(payload))}
		case frameReport:
			var rep loadgen.ShardReport
			if err := json.Unmarshal(payload, &rep); err != nil {
				return loadgen.ShardResult{Err: fmt.Errorf("%w: report: %v", ErrBadFrame, err)}
			}
			return loadgen.ShardResult{Report: &rep}
		}
	}
}

// causeOr is ctx's cause when ctx ended (the watchdog's reason), else err.
func causeOr(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
