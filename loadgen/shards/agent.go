package shards

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
	"github.com/bulkheadlab/bulkheadlab/internal/loopback"
	"github.com/bulkheadlab/bulkheadlab/loadgen"
)

// Protocol is the version of the protocol between a runner and its
// shards: the package doc's API, the shard's config (loadgen.MarshalShard)
// and the batch format. It changes whenever one of them does; a runner and
// a shard of different builds talk as long as it is the same.
const Protocol = "bulkheadlab-shards/2"

// DefaultArmTimeout is how long an armed shard waits for its start.
const DefaultArmTimeout = 2 * time.Minute

// maxArmBody bounds an arm request (a config with request bodies).
const maxArmBody = 64 << 20

// Agent is a shard process's HTTP API (see the package doc). It runs one
// load at a time. Its methods are safe for concurrent use.
type Agent struct {
	// Version is the protocol's (Protocol in production); a Fleet of
	// another is refused.
	Version string
	// Index is the shard's index as its orchestrator named it (an Indexed
	// Job's completion index), -1 when none did; a Fleet checks it.
	Index int
	// AllowRemote lets the load go to targets off loopback (a shard in a
	// cluster); without it every target must be on loopback.
	AllowRemote bool
	// Token, if set, is the run's secret every request but GET /healthz
	// must carry (see internal/ctlauth); the Host, Origin and Content-Type
	// checks hold without it too.
	Token string
	// Targets, if set, are the only origins (scheme://host:port, as
	// ParseTargets reads them) the shard sends to: the run's, fixed when
	// the run was created. An arm that names another is refused 403.
	Targets []string
	// ArmTimeout disarms a shard not started in time; 0 means
	// DefaultArmTimeout.
	ArmTimeout time.Duration
	// Now is the clock; nil means time.Now (tests skew it).
	Now func() time.Time

	allowOnce sync.Once
	allow     map[string]bool // Targets, normalized

	mu      sync.Mutex
	armed   *loadgen.PreparedShard
	armedAt time.Time
	arming  bool
	running bool
}

// Hello is /healthz's answer.
type Hello struct {
	Version string `json:"version"`
	Index   int    `json:"index"`
}

type clockAnswer struct {
	Now int64 `json:"now"`
}

type armRequest struct {
	Version string          `json:"version"`
	Config  json.RawMessage `json:"config"`
}

type startRequest struct {
	T0 int64 `json:"t0"`
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Handler serves the API behind ctlauth.Guard with Token: GET /healthz
// answers anyone, and tells only that the shard is up.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, Hello{Version: a.Version, Index: a.Index})
	})
	mux.HandleFunc("GET /clock", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, clockAnswer{Now: a.now().UnixNano()})
	})
	mux.HandleFunc("POST /arm", a.arm)
	mux.HandleFunc("POST /start", a.start)
	mux.HandleFunc("POST /disarm", a.disarm)
	return ctlauth.Guard(mux, a.Token)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}

func (a *Agent) arm(w http.ResponseWriter, r *http.Request) {
	var req armRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxArmBody)).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "arm: %v", err)
		return
	}
	if req.Version != a.Version {
		fail(w, http.StatusConflict, "arm: the runner is version %q, this shard %q", req.Version, a.Version)
		return
	}
	cfg, err := loadgen.UnmarshalShard(req.Config)
	if err != nil {
		fail(w, http.StatusBadRequest, "arm: %v", err)
		return
	}
	if err := a.checkTargets(cfg); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errNotOfRun) {
			code = http.StatusForbidden
		}
		fail(w, code, "arm: %v", err)
		return
	}
	// Armed or running, a shard takes no other load: one arm at a time,
	// so at most one schedule is held (its size bounded by PrepareShard).
	if err := a.reserve(); err != nil {
		fail(w, http.StatusConflict, "arm: %v", err)
		return
	}
	ps, err := loadgen.PrepareShard(cfg)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.arming = false
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, loadgen.ErrShardLimit) {
			code = http.StatusRequestEntityTooLarge
		}
		fail(w, code, "arm: %v", err)
		return
	}
	a.armed, a.armedAt = ps, a.now()
	writeJSON(w, http.StatusOK, map[string]int64{"duration_ns": int64(ps.Duration())})
}

// reserve marks the shard arming, unless it is armed (and the arming has
// not expired), arming or running.
func (a *Agent) reserve() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.armed != nil && a.now().Sub(a.armedAt) > orDefault(a.ArmTimeout, DefaultArmTimeout) {
		a.armed = nil
	}
	switch {
	case a.running:
		return errors.New("a load is running")
	case a.arming:
		return errors.New("another arm is being prepared")
	case a.armed != nil:
		return errors.New("already armed: POST /disarm first")
	}
	a.arming = true
	return nil
}

func (a *Agent) disarm(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = nil
	writeJSON(w, http.StatusOK, map[string]bool{"armed": false})
}

// errNotOfRun is wrapped by checkTargets' error for a target outside
// Targets.
var errNotOfRun = errors.New("not a target of this run")

// checkTargets refuses targets off loopback unless allowed, and targets
// outside Targets when it is set.
func (a *Agent) checkTargets(cfg loadgen.Config) error {
	a.allowOnce.Do(func() {
		if len(a.Targets) == 0 {
			return
		}
		a.allow = map[string]bool{}
		for _, t := range a.Targets {
			if o, err := Origin(t); err == nil {
				a.allow[o] = true
			}
		}
	})
	for i, t := range cfg.Targets {
		urls := t.URLs
		if len(urls) == 0 {
			urls = []string{t.URL}
		}
		field := fmt.Sprintf("targets[%d]", i)
		for _, u := range urls {
			if err := loopback.CheckURL(field, u, a.AllowRemote); err != nil {
				return err
			}
			if a.allow == nil {
				continue
			}
			if o, err := Origin(u); err != nil || !a.allow[o] {
				return fmt.Errorf("%s: %s is %w (its targets are fixed when the run is created)", field, redact(u), errNotOfRun)
			}
		}
	}
	return nil
}

// take hands the armed load to one start.
func (a *Agent) take() (*loadgen.PreparedShard, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.running:
		return nil, errors.New("a load is running")
	case a.armed == nil:
		return nil, errors.New("not armed")
	case a.now().Sub(a.armedAt) > orDefault(a.ArmTimeout, DefaultArmTimeout):
		a.armed = nil
		return nil, errors.New("the arming expired")
	}
	ps := a.armed
	a.armed, a.running = nil, true
	return ps, nil
}

func (a *Agent) start(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "start: %v", err)
		return
	}
	ps, err := a.take()
	if err != nil {
		fail(w, http.StatusConflict, "start: %v", err)
		return
	}
	defer func() {
		a.mu.Lock()
		a.running = false
		a.mu.Unlock()
	}()
	// t0 by this shard's clock, as a time.Time of the real clock.
	t0 := time.Now().Add(time.Unix(0, req.T0).Sub(a.now()))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 64<<10)
	emit := func(batch []byte) error {
		if err := writeFrame(bw, frameBatch, batch); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	rep, err := ps.Run(r.Context(), t0, emit)
	if r.Context().Err() != nil {
		return // the runner is gone
	}
	if err != nil && rep == nil {
		_ = writeFrame(bw, frameError, []byte(err.Error()))
	} else {
		b, _ := json.Marshal(rep)
		_ = writeFrame(bw, frameReport, b)
	}
	_ = bw.Flush()
	_ = rc.Flush()
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
