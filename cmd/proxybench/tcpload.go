package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// tcpMsg is the size of one exchange's request and of its answer: a small
// command and its reply, as to a cache.
const tcpMsg = 64

// runTCPEcho is the child mode "tcpecho": a TCP server on 127.0.0.1:0 that
// writes back what it reads, announced as {"addr": ...} on stdout, until
// SIGTERM.
func runTCPEcho() error {
	return serveAnnounced(func(ctx context.Context, c net.Conn) {
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 4096))
	})
}

// tcpCell is one target's exchanges at one rate for one stretch.
type tcpCell struct {
	target   string
	rate     int
	sent, ok int
	lat      []time.Duration // of the exchanges that completed, from write to the answer's last byte
	errs     map[string]int
	cpu      time.Duration // the target process's CPU time over the cell
	elapsed  time.Duration
}

func (c tcpCell) okRatio() float64 { return float64(c.ok) / float64(max(c.sent, 1)) }

// held: at least 99.9 % of the exchanges completed and the completions
// kept up with at least 97 % of the rate.
func (c tcpCell) held() bool {
	return c.sent > 0 && c.okRatio() >= 0.999 && float64(c.ok)/c.elapsed.Seconds() >= 0.97*float64(c.rate)
}

// tcpAttack runs exchanges at rate for d over conns kept connections to
// addr: exchanges are scheduled at the rate whether or not the earlier ones
// have come back, and taken by the first free connection. Each exchange writes tcpMsg bytes and reads tcpMsg bytes back
// within timeout; a failed connection is replaced. Bounded in count
// (rate·d) and in time (d + timeout).
func tcpAttack(ctx context.Context, name, addr string, pid, rate, conns int, d, timeout time.Duration) (tcpCell, error) {
	c := tcpCell{target: name, rate: rate, errs: map[string]int{}}
	n := int(float64(rate) * d.Seconds())
	var pool []net.Conn
	defer func() {
		for _, nc := range pool {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	for range conns {
		nc, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return c, fmt.Errorf("%s: dial: %w", name, err)
		}
		_ = nc.(*net.TCPConn).SetNoDelay(true)
		pool = append(pool, nc)
	}
	sched := make(chan time.Time, n)
	type result struct {
		lat time.Duration
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range pool {
		wg.Go(func() {
			req, resp := make([]byte, tcpMsg), make([]byte, tcpMsg)
			for range sched {
				if pool[i] == nil {
					nc, err := net.DialTimeout("tcp", addr, timeout)
					if err != nil {
						results <- result{err: err}
						continue
					}
					pool[i] = nc
				}
				nc := pool[i]
				sent := time.Now()
				_ = nc.SetDeadline(sent.Add(timeout))
				_, err := nc.Write(req)
				if err == nil {
					_, err = io.ReadFull(nc, resp)
				}
				if err != nil {
					nc.Close()
					pool[i] = nil
				}
				results <- result{lat: time.Since(sent), err: err}
			}
		})
	}
	cpu0, _ := cpuOf(pid)
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		sched <- at
		c.sent++
	}
	close(sched)
	wg.Wait()
	c.elapsed = time.Since(start)
	cpu1, _ := cpuOf(pid)
	c.cpu = cpu1 - cpu0
	close(results)
	for r := range results {
		if r.err != nil {
			key := r.err.Error()
			var ne net.Error
			if errors.As(r.err, &ne) && ne.Timeout() {
				key = "timeout"
			}
			c.errs[key]++
			continue
		}
		c.ok++
		c.lat = append(c.lat, r.lat)
	}
	slices.Sort(c.lat)
	return c, ctx.Err()
}
