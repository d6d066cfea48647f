package faultproxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// slowCalls watches for clients that go away during upstream calls that
// last upstreamWatch or more, so that such a call is cut (as net/http's
// server cancels a request's context). A timer per call would cost more
// than the rest of the call: adding one wakes the runtime's network
// poller. Instead a call is marked on its connection, with atomics only
// (a lock shared by every connection and taken twice per request showed
// in the proxy's latency), and while any connection has a call, one
// goroutine looks every upstreamWatch through the server's connections
// for calls that have lasted that long and starts watching their client
// (until the connection's idle deadline, which a call longer than two
// minutes outlasts). It ends after a while without calls.
type slowCalls struct {
	srv     *rawServer
	epoch   time.Time // the clock of callStart
	running atomic.Bool
	quit    chan struct{} // closed when the server stops
	quitOne sync.Once
}

// The states of an rconn's call.
const (
	callNone    int32 = iota
	callActive        // an upstream call in progress
	callWatched       // one that lasted upstreamWatch: its client is watched
)

func (s *slowCalls) init(srv *rawServer) {
	s.srv, s.epoch, s.quit = srv, time.Now(), make(chan struct{})
}

// stop ends the loop for good (server shutdown).
func (s *slowCalls) stop() { s.quitOne.Do(func() { close(s.quit) }) }

// add marks c's upstream call on pc, begun at start, and makes sure the
// loop runs. It stores the call before it loads running, and the loop
// stores running before its last look at the calls, so that a call is
// never left without a loop.
func (s *slowCalls) add(c *rconn, pc *h1Conn, start time.Time) {
	c.callConn.Store(pc)
	c.callStart.Store(int64(start.Sub(s.epoch)))
	c.call.Store(callActive)
	if !s.running.Load() && s.running.CompareAndSwap(false, true) {
		go s.loop()
	}
}

// remove ends c's call, and the watch of its client if one began.
func (s *slowCalls) remove(c *rconn) {
	if c.call.Swap(callNone) == callWatched {
		c.endWatch()
	}
}

func (s *slowCalls) loop() {
	tick := time.NewTicker(upstreamWatch)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-tick.C:
		case <-s.quit:
			s.running.Store(false)
			return
		}
		if s.scan(time.Now()) > 0 {
			idle = 0
			continue
		}
		if idle++; idle < 20 {
			continue
		}
		s.running.Store(false)
		if s.scan(time.Now()) == 0 || !s.running.CompareAndSwap(false, true) {
			return // no calls, or a new loop runs
		}
		idle = 0
	}
}

// scan starts watching the clients of calls that have lasted
// upstreamWatch at now, and returns how many calls are in progress.
func (s *slowCalls) scan(now time.Time) int {
	t := int64(now.Sub(s.epoch))
	n := 0
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	for c := range s.srv.conns {
		st := c.call.Load()
		if st == callNone {
			continue
		}
		n++
		// A call that ended and a next one that began between these loads
		// is watched from now on, a little early: harmless.
		if st != callActive || t-c.callStart.Load() < int64(upstreamWatch) || !c.call.CompareAndSwap(callActive, callWatched) {
			continue
		}
		pc := c.callConn.Load()
		go func() {
			c.watchLoop(func() {
				c.gone.Store(true)
				_ = pc.c.SetDeadline(aLongTimeAgo)
			})
			c.watchDone <- struct{}{}
		}()
	}
	return n
}
