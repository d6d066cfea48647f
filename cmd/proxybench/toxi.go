package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// toxi drives a Toxiproxy server through its HTTP API.
type toxi struct {
	api string // http://host:port
	hc  *http.Client
}

// freePort returns a loopback port that was free a moment ago (the
// Toxiproxy server takes its API port as a flag and cannot bind :0).
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// waitReady polls GET /version until it answers 200, the child ends or
// timeout passes.
func (t *toxi) waitReady(ctx context.Context, c *child, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := t.hc.Get(t.api + "/version")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return strings.TrimSpace(string(b)), nil
			}
		}
		if c.exited() {
			return "", fmt.Errorf("toxiproxy server ended at start: %v", c.err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("toxiproxy API at %s not ready within %v: %v", t.api, timeout, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (t *toxi) call(method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, t.api+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.hc.Do(req)
	if err != nil {
		return fmt.Errorf("toxiproxy %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("toxiproxy %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// createProxy creates an enabled TCP proxy to upstream (host:port) on a
// free loopback port and returns the bound listen address.
func (t *toxi) createProxy(name, upstream string) (string, error) {
	var out struct {
		Listen string `json:"listen"`
	}
	in := map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}
	if err := t.call(http.MethodPost, "/proxies", in, http.StatusCreated, &out); err != nil {
		return "", err
	}
	return out.Listen, nil
}

// addLatency adds a latency toxic (no jitter) on the downstream (response)
// direction of every connection of proxy.
func (t *toxi) addLatency(proxy, name string, d time.Duration) error {
	in := map[string]any{"name": name, "type": "latency", "stream": "downstream", "toxicity": 1.0,
		"attributes": map[string]any{"latency": d.Milliseconds(), "jitter": 0}}
	return t.call(http.MethodPost, "/proxies/"+proxy+"/toxics", in, http.StatusOK, nil)
}

func (t *toxi) removeToxic(proxy, name string) error {
	return t.call(http.MethodDelete, "/proxies/"+proxy+"/toxics/"+name, nil, http.StatusNoContent, nil)
}
