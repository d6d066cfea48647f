package faultproxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The forwarding path. It does what httputil.ReverseProxy (with Rewrite
// and SetURL) does for a plain request, with less work per request: the
// outbound request is a shallow copy of the inbound one whose header map
// shares the inbound values, the answer's headers are handed over without
// copying their values, the body is streamed through a pooled buffer, and
// no trace, timer or goroutine is set up. Protocol upgrades (WebSocket,
// h2c) go through the ReverseProxy, which handles 101 Switching Protocols.

// hopHeaders are the hop-by-hop headers dropped in both directions
// (RFC 9110 §7.6.1, and the older list that ReverseProxy keeps dropping),
// besides those named by Connection.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// forwardedHeaders are client-provided forwarding headers, dropped from the
// outbound request as ReverseProxy's Rewrite mode does (the proxy adds
// none).
var forwardedHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

// Shared, never modified header values.
var (
	noUserAgent = []string{""} // keeps the transport from adding Go's User-Agent
	teTrailers  = []string{"trailers"}
)

func isHopHeader(k string) bool {
	for _, h := range hopHeaders {
		if k == h {
			return true
		}
	}
	return false
}

// connNames are the header names listed in a Connection header,
// canonicalised: a few in a slice, more in a set, so that checking every
// header against them takes linear time whatever the header holds.
type connNames struct {
	few  []string
	many map[string]struct{}
}

// connectionTokens returns the header names listed in h's Connection
// header; no allocation when there are none.
func connectionTokens(h http.Header) connNames {
	var c connNames
	for _, v := range h["Connection"] {
		for sf := range strings.SplitSeq(v, ",") {
			if sf = strings.TrimSpace(sf); sf == "" {
				continue
			}
			sf = http.CanonicalHeaderKey(sf)
			if c.many == nil && len(c.few) < 8 {
				c.few = append(c.few, sf)
				continue
			}
			if c.many == nil {
				c.many = make(map[string]struct{})
				for _, f := range c.few {
					c.many[f] = struct{}{}
				}
			}
			c.many[sf] = struct{}{}
		}
	}
	return c
}

// endToEnd reports whether header k (canonical) is forwarded: not
// hop-by-hop and not named by Connection (conn).
func endToEnd(k string, conn connNames) bool {
	if isHopHeader(k) {
		return false
	}
	if conn.many != nil {
		_, named := conn.many[k]
		return !named
	}
	for _, c := range conn.few {
		if k == c {
			return false
		}
	}
	return true
}

// outHeader returns the outbound request's header: the end-to-end headers
// of in, sharing their values (nothing downstream modifies them), without
// client-provided forwarding headers; Te: trailers if the client accepts
// trailers; an empty User-Agent if the client sent none.
func outHeader(in http.Header) http.Header {
	conn := connectionTokens(in)
	out := make(http.Header, len(in)+1)
	for k, vv := range in {
		if !endToEnd(k, conn) || isForwardedHeader(k) {
			continue
		}
		out[k] = vv
	}
	if te, ok := in["Te"]; ok && tokenListContains(te, "trailers") {
		out["Te"] = teTrailers
	}
	if _, ok := out["User-Agent"]; !ok {
		out["User-Agent"] = noUserAgent
	}
	return out
}

func isForwardedHeader(k string) bool {
	for _, h := range forwardedHeaders {
		if k == h {
			return true
		}
	}
	return false
}

// tokenListContains reports whether any comma-separated element of vv is
// token, case-insensitively.
func tokenListContains(vv []string, token string) bool {
	for _, v := range vv {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// isUpgrade reports whether r asks to switch protocols.
func isUpgrade(h http.Header) bool {
	return len(h["Upgrade"]) > 0 && tokenListContains(h["Connection"], "upgrade")
}

// outURL is in's URL rewritten onto target as ReverseProxy's SetURL does:
// target's scheme and host, the paths joined, the queries joined with "&",
// and unparsable query parameters removed.
func outURL(target *url.URL, in *url.URL) *url.URL {
	u := &url.URL{Scheme: target.Scheme, Host: target.Host, Path: in.Path, RawPath: in.RawPath}
	if target.Path != "" && target.Path != "/" || target.RawPath != "" {
		u.Path, u.RawPath = joinURLPath(target, in)
	}
	q := cleanQueryParams(in.RawQuery)
	switch {
	case target.RawQuery == "":
		u.RawQuery = q
	case q == "":
		u.RawQuery = target.RawQuery
	default:
		u.RawQuery = target.RawQuery + "&" + q
	}
	return u
}

// joinURLPath and singleJoiningSlash are httputil's.
func singleJoiningSlash(a, b string) string {
	aslash := strings.HasSuffix(a, "/")
	bslash := strings.HasPrefix(b, "/")
	switch {
	case aslash && bslash:
		return a + b[1:]
	case !aslash && !bslash:
		return a + "/" + b
	}
	return a + b
}

func joinURLPath(a, b *url.URL) (path, rawpath string) {
	if a.RawPath == "" && b.RawPath == "" {
		return singleJoiningSlash(a.Path, b.Path), ""
	}
	// Same as singleJoiningSlash, but uses EscapedPath to determine
	// whether a slash should be added
	apath := a.EscapedPath()
	bpath := b.EscapedPath()

	aslash := strings.HasSuffix(apath, "/")
	bslash := strings.HasPrefix(bpath, "/")

	switch {
	case aslash && bslash:
		return a.Path + b.Path[1:], apath + bpath[1:]
	case !aslash && !bslash:
		return a.Path + "/" + b.Path, apath + "/" + bpath
	}
	return a.Path + b.Path, apath + bpath
}

// cleanQueryParams removes unparsable query parameters (with ';' or a bad
// %-escape) by re-encoding the query, as ReverseProxy does; a clean query
// is returned as is.
func cleanQueryParams(s string) string {
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			v, _ := url.ParseQuery(s)
			return v.Encode()
		case '%':
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				v, _ := url.ParseQuery(s)
				return v.Encode()
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// noCloseBody keeps the transport from closing the inbound request body
// (it closes the outbound one when the upstream cannot be reached, and the
// inbound body may still be waiting for the client, e.g. after
// Expect: 100-continue).
type noCloseBody struct{ io.Reader }

func (noCloseBody) Close() error { return nil }

// forward sends r to the upstream within ctx (r's context) and streams the
// answer to w; an upstream failure answers 502.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, ctx context.Context) {
	if !forwardableTarget(r.URL) {
		p.m.clientErrors[reasonMalformed].Inc()
		w.Header().Set("Connection", "close")
		http.Error(w, errTargetForm.Error(), http.StatusBadRequest)
		return
	}
	if isUpgrade(r.Header) {
		p.rp.ServeHTTP(w, r)
		return
	}
	out := r.WithContext(ctx) // a shallow copy: r's own fields are not touched
	out.URL = outURL(p.target, r.URL)
	out.Host = ""
	out.RequestURI = ""
	out.Close = false
	out.Header = outHeader(r.Header)
	var body *idleBody
	if r.ContentLength == 0 {
		out.Body = nil // lets the transport retry on a stale connection
	} else if r.Body != nil {
		body = p.bodyIdle(w, r)
		out.Body = noCloseBody{body}
	}
	var res *http.Response
	var pc *h1Conn
	var err error
	sent := time.Now()
	if p.h1 != nil {
		res, pc, err = p.h1.roundTrip(ctx, out)
	} else {
		res, err = p.transport.RoundTrip(out)
	}
	if err != nil {
		if body != nil && body.stalled.Load() {
			p.stalledBody(w)
			return
		}
		p.upstreamError(w, r, err)
		return
	}
	p.m.upstream.Observe(time.Since(sent).Seconds())
	h := w.Header()
	conn := connectionTokens(res.Header)
	for k, vv := range res.Header {
		if endToEnd(k, conn) {
			h[k] = vv
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(res.StatusCode)
	if err := copyBody(w, res.Body, streaming(res)); err != nil {
		res.Body.Close()
		if pc != nil {
			p.h1.release(pc, res, false)
		}
		// The answer is cut: abort the connection so the client does not
		// take a truncated body for a whole one.
		abort()
	}
	res.Body.Close() // now, so that res.Trailer is filled in
	if pc != nil {
		p.h1.release(pc, res, true)
	}
	if len(res.Trailer) == 0 {
		return
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush() // forces chunking, so the trailers can be sent
	}
	if len(res.Trailer) == announced {
		for k, vv := range res.Trailer {
			h[k] = vv
		}
		return
	}
	for k, vv := range res.Trailer {
		for _, v := range vv {
			h.Add(http.TrailerPrefix+k, v)
		}
	}
}

// streaming reports whether each chunk of res's body is sent on at once
// (as ReverseProxy does): a body of unknown length, or server-sent events.
func streaming(res *http.Response) bool {
	if res.ContentLength == -1 {
		return true
	}
	ct := res.Header.Get("Content-Type")
	const sse = "text/event-stream"
	return len(ct) >= len(sse) && strings.EqualFold(ct[:len(sse)], sse) &&
		(len(ct) == len(sse) || ct[len(sse)] == ';' || ct[len(sse)] == ' ')
}

// copyBuffers recycles 32 KiB body buffers.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody streams body to w through a pooled buffer, flushing after each
// write if flush. It returns the first read (other than EOF) or write
// error.
func copyBody(w http.ResponseWriter, body io.Reader, flush bool) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var fl http.Flusher
	if flush {
		fl, _ = w.(http.Flusher)
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
