//go:build kube

package kuberun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReachTimeout bounds each pod's reachability call.
const ReachTimeout = 10 * time.Second

// maxReachInFlight bounds the reachability calls in flight (a run may have
// hundreds of shard pods; the API server proxies every one).
const maxReachInFlight = 16

// ErrUnreachable is wrapped by every UnreachableError.
var ErrUnreachable = errors.New("a pod cannot be reached through the API server")

// UnreachableError is a pod the runner could not reach through the API
// server's pod proxy once every pod was ready: the experiment stops
// before any load.
type UnreachableError struct {
	// Pod is the pod's name, Role what it is ("the proxy of A", "shard 3").
	Pod, Role string
	// Dialled is the address the API server dials (the pod's IP and
	// port), URL what the runner asked for.
	Dialled, URL string
	// Message is why, in words: the API server's message (from its
	// Status, not the JSON), or the runner's own transport error.
	Message string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("pod %s (%s) cannot be reached at %s (GET %s): %s", e.Pod, e.Role, e.Dialled, e.URL, e.Message)
}

func (e *UnreachableError) Unwrap() error { return ErrUnreachable }

// reachTarget is one pod's port as the runner reaches it.
type reachTarget struct {
	pod, role string
	dialled   string
	url       string
	client    *http.Client
}

// newReachTarget is port of pod, reached at url with client.
func newReachTarget(pod *corev1.Pod, role string, port int32, url string, client *http.Client) reachTarget {
	ip := pod.Status.PodIP
	if ip == "" {
		ip = "(no pod IP)"
	}
	return reachTarget{pod: pod.Name, role: role, dialled: net.JoinHostPort(ip, strconv.Itoa(int(port))), url: url, client: client}
}

// reachAll calls GET /healthz on every target once, at most
// maxReachInFlight at a time, and returns an UnreachableError per target
// that did not answer 2xx (joined, in pod order).
func reachAll(ctx context.Context, targets []reachTarget) error {
	var (
		mu   sync.Mutex
		errs []*UnreachableError
		wg   sync.WaitGroup
		sem  = make(chan struct{}, maxReachInFlight)
	)
	for _, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if msg := reach(ctx, t); msg != "" {
				mu.Lock()
				errs = append(errs, &UnreachableError{Pod: t.pod, Role: t.role, Dialled: t.dialled, URL: t.url + "/healthz", Message: msg})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Pod < errs[j].Pod })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// reach calls GET /healthz on t and returns "" when it answered 2xx, else
// why not, in words.
func reach(ctx context.Context, t reachTarget) string {
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url+"/healthz", nil)
	if err != nil {
		return err.Error()
	}
	hc := t.client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Sprintf("no answer within %s (%v)", ReachTimeout, err)
		}
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return ""
	}
	return statusMessage(resp.Status, body)
}

// statusMessage is a failed answer in words: the message of the API
// server's Status ("error trying to reach service: dial tcp 10.0.0.5:8081:
// connect: connection refused"), else the HTTP status and the body's
// first line.
func statusMessage(status string, body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		msg := "the API server answered " + status + ": " + st.Message
		if st.Reason != "" && !strings.Contains(st.Message, string(st.Reason)) {
			msg += " (" + string(st.Reason) + ")"
		}
		return msg
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	if line == "" {
		return "answered " + status
	}
	return "answered " + status + ": " + line
}
