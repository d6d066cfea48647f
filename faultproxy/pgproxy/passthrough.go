package pgproxy

import (
	"net"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// relayTLS relays a connection whose client started TLS (TLSPassthrough)
// as plain TCP: pkt (its SSLRequest, nil for a direct handshake) and what
// the proxy had read go to the upstream first. The proxy cannot read the
// queries, so the fault set is rolled once for the connection, as the TCP
// data plane rolls it, and only its faults without match take part: a
// latency holds each piece of the upstream's data Latency ± Jitter after
// it was read; a hang drops the upstream's data; an error closes the
// connection at once (the proxy cannot write into the encrypted stream).
// A warning is logged the first time.
func (c *conn) relayTLS(up *net.TCPConn, pkt []byte) {
	p := c.p
	p.tlsWarn.Do(func() {
		p.errLog.Printf("pgproxy: a client started TLS: relayed as plain TCP (TLSPassthrough), faults act per connection there (those with a match never, an error closes the connection)")
	})
	p.m.tls.Inc()
	set := p.set.Load()
	var plain uint64
	for i, re := range set.res {
		if re == nil {
			plain |= 1 << i
		}
	}
	seq := p.qseq.Add(1)
	dec := set.decide(p.seed, seq, plain)
	arrived := time.Now()
	outcome := outcomeForwarded
	defer func() {
		if p.ledger != nil {
			p.ledger.Record(faultproxy.LedgerEntry{Time: arrived, Seq: seq, Decision: "tls:" + dec.name, Outcome: outcome,
				RequestedDelayMS: float64(dec.delay) / 1e6, DurationMS: float64(time.Since(arrived)) / 1e6})
		}
	}()
	for _, t := range dec.fired {
		p.m.injected[t].Inc()
	}
	switch {
	case dec.err != nil:
		outcome = outcomeError
		return
	case dec.hang:
		outcome = outcomeHang
	}
	if _, err := up.Write(append(pkt, c.crd.peek(c.crd.buffered())...)); err != nil {
		return
	}
	c.crd.skip(c.crd.buffered())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer c.close()
		buf := make([]byte, bufSize)
		for {
			n, err := c.client.Read(buf)
			if n > 0 {
				if _, werr := up.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	defer wg.Wait()
	defer c.close()
	buf := make([]byte, bufSize)
	for {
		n, err := up.Read(buf)
		if n > 0 && !dec.hang {
			if dec.delay > 0 && c.sleepUntil(time.Now().Add(dec.delay)) != nil {
				return
			}
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
