package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// serveRaw is ServeHTTP for the raw data plane: the same decision,
// faults, ledger and metrics. It reports whether the connection may serve
// another request.
func (p *Proxy) serveRaw(c *rconn) bool {
	arrived := time.Now()
	p.enter()
	c.counted = &p.inflight
	defer c.answering() // if no answer went out
	set, d, e, cls := p.begin(arrived, &reqLine{raw: true, method: c.req.line[0], target: c.req.line[1]})
	if cls != 0 {
		c.classes, c.classBits, c.arrived = p.classes, cls, arrived
	}
	if d.Capacity {
		return p.serveRawCapacity(c, set, d, e, arrived)
	}
	if d.Latencies > 0 {
		w := clientWatch{c: c}
		ok := p.delayRaw(c, &w, arrived, d, &e)
		w.end()
		if !ok {
			return false
		}
	}
	return p.actRaw(c, set, d, e)
}

// serveRawCapacity is serveRaw for a request that a capacity fault fired
// on: it waits for a slot (watching its client), and holds it through its
// delay and its outcome.
func (p *Proxy) serveRawCapacity(c *rconn, set *faultSet, d Decision, e LedgerEntry, arrived time.Time) bool {
	w := &clientWatch{c: c}
	res, start := p.admit(set.capacity, w.gone, arrived, &e)
	if res != admitted {
		w.end()
		p.recordID(c.req.requestID, d, e)
		return res == admitFull && c.writeReply(&overloaded) // else the connection is cut
	}
	defer set.capacity.release()
	ok := true
	if d.Latencies > 0 || d.Delay > 0 {
		ok = p.delayRaw(c, w, start, d, &e)
	}
	w.end() // before the upstream call, which watches the client its own way
	return ok && p.actRaw(c, set, d, e)
}

// clientWatch watches a raw connection's client from the first time its
// channel is asked for until end.
type clientWatch struct {
	c    *rconn
	ch   chan struct{}
	stop func()
}

// gone returns a channel closed when the client goes away, starting the
// watch on the first call.
func (w *clientWatch) gone() <-chan struct{} {
	if w.ch == nil {
		ch := make(chan struct{})
		w.ch, w.stop = ch, w.c.watch(func() { close(ch) })
	}
	return w.ch
}

// end stops the watch, if one runs, and waits for it. Idempotent.
func (w *clientWatch) end() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// actRaw ends a request that may go on: it forwards it, or injects the
// terminal fault that fired. It reports whether the connection may serve
// another request.
func (p *Proxy) actRaw(c *rconn, set *faultSet, d Decision, e LedgerEntry) bool {
	if d.Terminal < 0 {
		p.recordID(c.req.requestID, d, e)
		return p.forwardRaw(c, shaping{set, d})
	}
	p.m.injected[d.TerminalType].Inc()
	e.Outcome = d.TerminalType
	return set.answers[d.Terminal].answerRaw(p, c, answer{set: set, d: d, e: e})
}

func (p *Proxy) recordID(id []byte, d Decision, e LedgerEntry) {
	if p.ledger == nil {
		return
	}
	e.Decision = d.String()
	e.RequestID = string(id)
	p.ledger.Record(e)
}

// hasBody reports whether the request head announces a body.
func (h *head) hasBody() bool { return h.chunked || h.contentLength > 0 }

// keepAfter reports whether the client connection may serve another
// request after an answer that did not read the request's body.
func (h *head) keepAfter() bool { return !h.close && !h.hasBody() }

// writeReply answers with an error fault's reply f.
func (c *rconn) writeReply(f *Reply) bool {
	bw := c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(f.Status))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(f.Status))
	bw.WriteString("\r\n")
	hasCT := false
	for k, v := range f.Headers {
		k = http.CanonicalHeaderKey(k)
		hasCT = hasCT || k == "Content-Type"
		writeHeaderLine(bw, k, v)
	}
	if !hasCT {
		bw.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	}
	writeHeaderLine(bw, "Date", time.Now().UTC().Format(http.TimeFormat))
	writeHeaderLine(bw, "Content-Length", strconv.Itoa(len(f.Body)))
	keep := c.req.keepAfter()
	if !keep {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if string(c.req.line[0]) != http.MethodHead {
		bw.WriteString(f.Body)
	}
	c.answering()
	return bw.Flush() == nil && keep
}

func writeHeaderLine(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// upstreamErrorRaw answers 502 for a failed upstream call, or counts a
// cancellation if the client went away. The client connection stays open
// (as net/http's server keeps it) if keep: the request was read whole
// and the client did not ask to close.
func (p *Proxy) upstreamErrorRaw(c *rconn, err error, keep bool) bool {
	if c.gone.Load() {
		p.m.cancelled.Inc()
		return false
	}
	p.m.upstreamErrors.Inc()
	body := "faultproxy: upstream: " + err.Error() + "\n"
	bw := c.bw
	bw.WriteString("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nX-Faultproxy-Error: upstream\r\n")
	writeHeaderLine(bw, "Date", time.Now().UTC().Format(http.TimeFormat))
	writeHeaderLine(bw, "Content-Length", strconv.Itoa(len(body)))
	keep = keep && !c.req.close
	if !keep {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if string(c.req.line[0]) != http.MethodHead {
		bw.WriteString(body)
	}
	c.answering()
	return bw.Flush() == nil && keep
}

// clientBodyErrorRaw ends a request whose body could not be read from the
// client: 400 for a malformed one (RFC 9112, 7.1); 408 for one that
// stopped coming (errBodyIdle), if no answer has begun; both count as
// client errors (refuse). Nothing if the client went away, which alone
// counts as cancelled. None is an upstream error. The connection closes.
func (p *Proxy) clientBodyErrorRaw(c *rconn, err *srcError) bool {
	switch {
	case errors.Is(err, errBadChunk):
		c.answering()
		c.refuse(http.StatusBadRequest, reasonMalformed)
	case errors.Is(err, errBodyIdle):
		if c.counted == nil { // an answer has begun (see answering)
			p.m.clientErrors[reasonStalledBody].Inc()
			break
		}
		c.answering()
		c.refuse(http.StatusRequestTimeout, reasonStalledBody)
	default:
		p.m.cancelled.Inc()
	}
	return false
}

// outTarget is the request target to send upstream: the client's as it
// came in the usual case (an origin-form target, an upstream URL without a
// path or query, a clean query); otherwise rewritten as outURL does.
func (p *Proxy) outTarget(target []byte) ([]byte, error) {
	t := p.target
	if len(target) > 0 && target[0] == '/' && (t.Path == "" || t.Path == "/") && t.RawPath == "" && t.RawQuery == "" {
		q := bytes.IndexByte(target, '?')
		if q < 0 || cleanQueryParams(string(target[q+1:])) == string(target[q+1:]) {
			return target, nil
		}
	}
	if string(target) == "*" {
		return target, nil
	}
	u, err := url.ParseRequestURI(string(target))
	if err != nil {
		return nil, err
	}
	if !forwardableTarget(u) {
		return nil, errTargetForm
	}
	return []byte(outURL(t, u).RequestURI()), nil
}

// errTargetForm is the failure of a request target that is neither
// origin-form, an http(s) absolute-form nor "*".
var errTargetForm = errors.New("faultproxy: a request target must be a path, an http or https URI, or *")

// forwardableTarget reports whether a parsed request target can be sent
// on as a path (RFC 9112, 3.2): origin-form, or absolute-form with the
// http or https scheme and a hierarchical part. An opaque URI ("a:0") or
// another scheme cannot, and is refused (400) rather than guessed at;
// net/http's server takes it and ReverseProxy sends the opaque part on as
// the target, which the upstream cannot parse.
func forwardableTarget(u *url.URL) bool {
	if u.Opaque != "" {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "", "http", "https":
		return true
	}
	return false
}

// forwardRaw forwards the request read on c to the upstream and relays the
// answer, its body shaped by sh. It reports whether c may serve another
// request.
func (p *Proxy) forwardRaw(c *rconn, sh shaping) bool {
	req := &c.req
	target, err := p.outTarget(req.line[1])
	if err != nil {
		c.answering()
		c.refuse(http.StatusBadRequest, reasonMalformed)
		return false
	}
	out := append(c.out[:0], req.line[0]...)
	out = append(out, ' ')
	out = append(out, target...)
	out = append(out, " HTTP/1.1\r\nHost: "...)
	out = append(out, p.h1.host...)
	out = append(out, "\r\n"...)
	for _, x := range req.hdrs {
		if !x.drop {
			out = append(append(append(append(out, x.name...), ": "...), x.value...), "\r\n"...)
		}
	}
	if req.teTrailers {
		out = append(out, "Te: trailers\r\n"...)
	}
	switch {
	case req.chunked:
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	case req.contentLength >= 0:
		out = append(strconv.AppendInt(append(out, "Content-Length: "...), req.contentLength, 10), "\r\n"...)
	}
	if req.upgrade {
		out = append(append(append(out, "Connection: Upgrade\r\nUpgrade: "...), req.header("Upgrade")...), "\r\n"...)
	}
	out = append(out, "\r\n"...)
	c.out = out

	if req.expect100 && req.hasBody() {
		c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if c.bw.Flush() != nil {
			return false
		}
	}
	replayable := !req.hasBody()
	c.gone.Store(false)
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		pc, reused, err := p.h1.get(context.Background(), attempt > 0)
		if err != nil {
			return p.upstreamErrorRaw(c, err, replayable) // a body not read: close
		}
		_, werr := pc.bw.Write(out)
		if werr == nil && req.hasBody() {
			werr = c.relayBody(pc.bw)
		}
		if werr == nil {
			werr = pc.bw.Flush()
		}
		if se := (*srcError)(nil); errors.As(werr, &se) {
			// The client's body failed: the upstream has an unfinished
			// request, and no answer is to be waited for.
			pc.c.Close()
			return p.clientBodyErrorRaw(c, se)
		}
		err = p.readAnswerHead(c, pc, sent)
		if err == nil {
			took := time.Since(sent)
			ok := p.relayAnswer(c, pc, werr != nil, sh)
			p.m.upstream.Observe(took.Seconds()) // after the answer went out
			return ok
		}
		pc.c.Close()
		if werr != nil {
			err = werr
		}
		if !c.gone.Load() && reused && replayable && attempt == 0 && staleConnErr(err) {
			continue
		}
		return p.upstreamErrorRaw(c, err, werr == nil)
	}
}

// readAnswerHead reads the upstream's answer head into c.res, passing
// interim (1xx) answers on to the client. From upstreamWatch on, the client
// is watched (see slowCalls): if it goes away, the upstream call is cut.
// The call stays registered after a head was read; relayAnswer ends it.
func (p *Proxy) readAnswerHead(c *rconn, pc *h1Conn, sent time.Time) error {
	c.s.slow.add(c, pc, sent)
	badFraming := false // of an interim answer: the connection is not reused
	for {
		err := readHead(pc.br, &c.res)
		if err == nil {
			err = c.res.parse(false)
		}
		if err != nil {
			c.s.slow.remove(c)
			return err
		}
		if s := c.res.status; s < 100 || s >= 200 || s == http.StatusSwitchingProtocols {
			c.res.badFraming = c.res.badFraming || badFraming
			return nil
		}
		badFraming = badFraming || c.res.badFraming
		// An interim answer (103 Early Hints...): pass it on.
		writeAnswerHead(c.bw, &c.res, false, false, nil)
		if err := c.bw.Flush(); err != nil {
			c.s.slow.remove(c)
			return err
		}
	}
}

// writeAnswerHead writes the answer head h to the client: the upstream's
// status, its end-to-end headers and its framing (Content-Length, or
// Transfer-Encoding: chunked and Trailer unless dechunk), and Connection:
// close if closing.
// upgrade, if not nil, is the protocol of a 101 answer.
func writeAnswerHead(bw *bufio.Writer, h *head, dechunk, closing bool, upgrade []byte) {
	bw.WriteString("HTTP/1.1 ")
	bw.Write(h.line[1])
	bw.WriteByte(' ')
	bw.Write(h.line[2])
	bw.WriteString("\r\n")
	for _, x := range h.hdrs {
		if x.drop || dechunk && eqFold(x.name, "Trailer") {
			continue
		}
		bw.Write(x.name)
		bw.WriteString(": ")
		bw.Write(x.value)
		bw.WriteString("\r\n")
	}
	switch {
	case h.chunked && !dechunk:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case h.contentLength >= 0 && !h.chunked:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(h.contentLength, 10))
		bw.WriteString("\r\n")
	}
	if closing {
		bw.WriteString("Connection: close\r\n")
	}
	if upgrade != nil {
		bw.WriteString("Connection: Upgrade\r\nUpgrade: ")
		bw.Write(upgrade)
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
}

// relayAnswer relays the answer whose head is in c.res and hands pc back.
// spent: the request could not be written whole (an early answer). Its
// body goes through the shaping faults of sh, if any fired: its head then
// goes out first, and the request counts in flight until the body is out.
//
// The upstream call that readAnswerHead registered ends here: for an
// answer that came whole with its head (the usual small one), once it went
// out, so that the client has it first; for one still to come, before it
// is relayed, as the client is no longer watched then.
func (p *Proxy) relayAnswer(c *rconn, pc *h1Conn, spent bool, sh shaping) bool {
	req, res := &c.req, &c.res
	noBody := bodyless(req.line[0], res.status)
	whole := res.status != http.StatusSwitchingProtocols &&
		(noBody || !res.chunked && res.contentLength >= 0 && res.contentLength <= int64(pc.br.Buffered()))
	if !whole {
		c.s.slow.remove(c)
	}
	if res.status == http.StatusSwitchingProtocols {
		if !req.upgrade {
			pc.c.Close()
			return p.upstreamErrorRaw(c, errors.New("101 Switching Protocols to a request without Upgrade"), !spent)
		}
		return p.tunnel(c, pc)
	}
	dechunk := !noBody && res.chunked && req.minor == 0
	var dechunked *bufio.Reader
	if dechunk {
		// An HTTP/1.0 client reads the answer until the connection
		// closes, so a head cut off alone reads as a whole empty answer:
		// the head waits for the body's first byte (or its end), and a
		// body that breaks off or is malformed before it is a 502.
		dechunked = bufio.NewReader(httputil.NewChunkedReader(pc.br))
		if _, err := dechunked.Peek(1); err != nil && err != io.EOF {
			p.h1.put(pc, false)
			return p.upstreamErrorRaw(c, err, false)
		}
	}
	untilClose := !noBody && !res.chunked && res.contentLength < 0
	closing := req.close || untilClose || dechunk || spent
	dst := c.bw
	if !noBody {
		dst = p.bodyWriter(c, sh)
	}
	if dst == c.bw {
		c.answering()
	}
	writeAnswerHead(c.bw, res, dechunk || noBody, closing, nil) // a HEAD answer keeps its length, not chunked
	var err error
	if dst != c.bw {
		err = c.bw.Flush() // the head, before a shaped body
	}
	switch {
	case err != nil, noBody:
	case dechunk:
		err = relayAll(dst, dechunked)
	case res.chunked:
		err = relayChunked(dst, pc.br)
	case res.contentLength >= 0:
		err = relayN(dst, pc.br, res.contentLength)
	default:
		err = relayAll(dst, pc.br)
	}
	if err == nil {
		err = flushAll(dst, c.bw)
	} else if se := (*srcError)(nil); errors.As(err, &se) {
		// The upstream's answer broke off: what came of it before goes
		// to the client all the same (as ReverseProxy passes on what it
		// read), and the connection is cut.
		_ = flushAll(dst, c.bw)
	}
	c.answering()
	if whole {
		c.s.slow.remove(c)
	}
	reusable := err == nil && !res.close && !res.badFraming && !untilClose && !dechunk && !spent && !c.gone.Load()
	p.h1.put(pc, reusable)
	return err == nil && !closing
}

// flushAll flushes dst and then, when it is another writer (a shaped
// body's, which writes to it), c's own.
func flushAll(dst, own *bufio.Writer) error {
	err := dst.Flush()
	if dst != own && err == nil {
		err = own.Flush()
	}
	return err
}

// tunnel relays bytes both ways after 101 Switching Protocols.
func (p *Proxy) tunnel(c *rconn, pc *h1Conn) bool {
	res := &c.res
	up := res.header("Upgrade")
	if up == nil {
		up = c.req.header("Upgrade")
	}
	writeAnswerHead(c.bw, res, false, false, up)
	c.answering()
	if c.bw.Flush() != nil {
		pc.c.Close()
		return false
	}
	// No deadline on a tunnel: the client's was the head's, and an
	// upgraded connection lives as long as its two ends want.
	c.clearDeadline()
	_ = pc.c.SetDeadline(time.Time{})
	// Both directions until either ends, then both connections close, as
	// ReverseProxy does.
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(pc.c, c.br) // client → upstream, buffered bytes first
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c.c, pc.br) // upstream → client, buffered bytes first
		done <- struct{}{}
	}()
	<-done
	c.c.Close()
	pc.c.Close()
	<-done
	return false
}

// relayN copies n bytes from src to dst, flushing dst whenever src has
// nothing buffered (before a read that may wait), so a slow stream is
// passed on as it comes. Failures of src are *srcError.
func relayN(dst *bufio.Writer, src *bufio.Reader, n int64) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	for n > 0 {
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		m, err := src.Read(buf[:min(n, int64(len(buf)))])
		if m > 0 {
			if _, werr := dst.Write(buf[:m]); werr != nil {
				return werr
			}
			n -= int64(m)
		}
		if err != nil && n > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return &srcError{err}
		}
	}
	return nil
}

// relayAll copies src to dst until src's EOF, flushing as relayN does.
func relayAll(dst *bufio.Writer, src *bufio.Reader) error {
	err := relayN(dst, src, 1<<62)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// errBadChunk is a malformed chunked body: a chunk size line that is not
// hex digits (optional whitespace and extensions after them) and CRLF,
// data not followed by CRLF, a bad trailer line, or a line of 4 KiB or
// more (net/http's limit).
var errBadChunk = errors.New("faultproxy: malformed chunked body")

// A srcError is a failure of the side a body is read from (a malformed
// body, or its connection failed); other errors of a relay are the
// destination's.
type srcError struct{ err error }

func (e *srcError) Error() string { return e.err.Error() }
func (e *srcError) Unwrap() error { return e.err }

// relayChunked copies one chunked body from src to dst: chunk sizes
// (rewritten as bare hex, extensions dropped, as a proxy that dechunks
// and rechunks has them), data, the last chunk and the trailer section
// (its lines as they came, with CRLF). It checks the syntax of RFC 9112,
// 7.1 as net/http does: a line ends with CRLF (no bare LF or CR, see
// CVE-2025-22871), sizes are hex, data ends with CRLF, trailer lines are
// header lines. Failures of src are *srcError.
//
// What it has for dst goes out before any read of src that may wait
// (as relayN, and net/http's chunked reader, which returns the data it
// has rather than wait for a size line that has not come whole): before a
// line that src has not buffered whole, too, so that a peer that pauses
// inside a size line holds back no chunk before it (nor, for a request,
// its head).
func relayChunked(dst *bufio.Writer, src *bufio.Reader) error {
	line := func() ([]byte, error) {
		if !lineBuffered(src) {
			if err := dst.Flush(); err != nil {
				return nil, err
			}
		}
		l, err := src.ReadSlice('\n')
		switch {
		case err == io.EOF:
			return nil, &srcError{io.ErrUnexpectedEOF}
		case err == bufio.ErrBufferFull:
			return nil, &srcError{errBadChunk}
		case err != nil:
			return nil, &srcError{err}
		}
		if len(l) < 2 || bytes.IndexByte(l, '\r') != len(l)-2 {
			return nil, &srcError{errBadChunk} // a bare LF, or a CR inside
		}
		return l[:len(l)-2], nil
	}
	var excess int64
	for {
		l, err := line()
		if err != nil {
			return err
		}
		size, ok := chunkSize(l)
		if !ok {
			return &srcError{errBadChunk}
		}
		// As net/http: at most 16 KiB of size lines beyond 16 bytes and
		// twice the data of each chunk.
		if excess = max(excess+int64(len(l))+2-16-2*size, 0); excess > 16<<10 {
			return &srcError{errBadChunk}
		}
		var hex [16]byte
		dst.Write(strconv.AppendInt(hex[:0], size, 16))
		if _, err := dst.WriteString("\r\n"); err != nil {
			return err
		}
		if size == 0 {
			for { // trailer lines, then the empty line
				l, err := line()
				if err != nil {
					return err
				}
				if len(l) > 0 && !validFieldLine(l) {
					return &srcError{errBadChunk}
				}
				if len(l) > 0 && !forwardableTrailer(string(l[:bytes.IndexByte(l, ':')])) {
					continue // it would change framing or routing: dropped
				}
				dst.Write(l)
				if _, err := dst.WriteString("\r\n"); err != nil {
					return err
				}
				if len(l) == 0 {
					return nil
				}
			}
		}
		if err := relayN(dst, src, size); err != nil {
			return err
		}
		if src.Buffered() < 2 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		crlf, err := src.Peek(2)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return &srcError{err}
		}
		if crlf[0] != '\r' || crlf[1] != '\n' {
			return &srcError{errBadChunk}
		}
		src.Discard(2)
		if _, err := dst.WriteString("\r\n"); err != nil {
			return err
		}
	}
}

// forwardableTrailer reports whether a trailer field named name may be
// forwarded: not one that frames, routes or authenticates a message
// (httpguts.ValidTrailerHeader: Host, Content-Length, Transfer-Encoding,
// Connection, Trailer, Te, Keep-Alive, Proxy-Authorization, …, the same
// net/http's server drops), nor Upgrade or another Proxy- field.
func forwardableTrailer(name string) bool {
	return httpguts.ValidTrailerHeader(name) && !strings.EqualFold(name, "Upgrade") &&
		!(len(name) >= 6 && strings.EqualFold(name[:6], "Proxy-"))
}

// lineBuffered reports whether br holds a whole line, so that reading it
// does not wait: the bytes it holds are looked at, none is read.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// validFieldLine reports whether l is a header line: a token, a colon and
// a value without control bytes (no obs-fold).
func validFieldLine(l []byte) bool {
	c := bytes.IndexByte(l, ':')
	return c > 0 && isToken(l[:c]) && validValue(l[c+1:])
}

// chunkSize parses a chunk size line without its CRLF: hex digits, then
// optional whitespace and extensions after ';' (whose bytes are those of a
// field value), nothing else.
func chunkSize(l []byte) (int64, bool) {
	var n int64
	digits := 0
	for i, c := range l {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			rest := l[i:]
			for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
				rest = rest[1:]
			}
			ok := digits > 0 && (len(rest) == 0 || rest[0] == ';' && validValue(rest))
			return n, ok
		}
		if digits == 15 {
			return 0, false // ≥ 2^60: no such chunk
		}
		n = n<<4 | int64(v)
		digits++
	}
	return n, digits > 0
}
