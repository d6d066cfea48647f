package faultproxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Parsing of HTTP/1.x message heads for the raw data plane (rawserver.go).
// A head is read whole into a buffer of its connection; header lines are
// kept as slices of it and forwarded as they came, but for the hop-by-hop
// ones and those that the proxy rewrites.

// maxHeadBytes bounds a message head (net/http's default is 1 MiB).
const maxHeadBytes = 1 << 20

// errHeadTooLarge and errBadHead are parse errors; a client gets 431 and
// 400 for them.
var (
	errHeadTooLarge = errors.New("message head too large")
	errBadHead      = errors.New("malformed message head")
	errVersion      = errors.New("unsupported HTTP version")
	errEncoding     = errors.New("unsupported transfer encoding")
)

// hdr is one header line, name and value slices of the head buffer.
type hdr struct {
	name, value []byte
	drop        bool // not forwarded: hop-by-hop, or rewritten by the proxy
}

// head is a parsed request or response head.
type head struct {
	buf  []byte
	line [3][]byte // request: method, target, version; response: version, code, reason
	hdrs []hdr
	// afterEmpty: readHead skipped empty lines before the start line.
	afterEmpty bool
	// minor is the HTTP/1 minor version (0 or 1; 1 for a later 1.x).
	minor int
	// oddMajor: a version other than HTTP/1.x (an answer read as 1.0).
	oddMajor bool
	// status is a response's status code.
	status int

	contentLength int64 // −1: none
	chunked       bool
	close         bool // Connection: close (or HTTP/1.0 without keep-alive)
	upgrade       bool // Connection: upgrade with an Upgrade header
	trailerHdr    bool // a Trailer header

	// response only: framing that its status forbids (1xx or 204 with a
	// length or chunked, 304 chunked); the connection is not reused.
	badFraming bool

	// request only
	requestID  []byte
	hasHost    bool
	expect100  bool
	teTrailers bool
}

// readHead reads one head (start line and header lines up to the empty
// line) from br into h, reusing h's buffers. Leading empty lines are
// skipped, as RFC 9112, 2.2 asks of a server before a request line, and
// noted in h.afterEmpty: parse refuses an answer after them, as net/http
// does (the RFC allows them before a request only).
func readHead(br *bufio.Reader, h *head) error {
	h.buf = h.buf[:0]
	h.afterEmpty = false
	lineStart := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if len(h.buf)+len(chunk) > maxHeadBytes {
			return errHeadTooLarge
		}
		h.buf = append(h.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue // a long line: read on
		}
		if err != nil {
			if err == io.EOF && len(h.buf) > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		l := h.buf[lineStart:]
		if len(l) == 1 || len(l) == 2 && l[0] == '\r' { // an empty line
			if lineStart == 0 {
				h.buf = h.buf[:0]
				h.afterEmpty = true
				continue
			}
			return nil
		}
		lineStart = len(h.buf)
	}
}

// parse parses h.buf as a request (req) or a response head, in one pass
// over its lines (readHead ends every line with a line feed).
//
// The proxy parses two heads per forwarded request, both on the path of
// the answer, and in a running proxy that path finds its code and data out
// of the CPU's caches (a process woken for each request): next to the
// earlier parser (a callback per line, a chain of name comparisons per
// header, a second pass for Connection), this one halves the time measured
// in the proxy between a head read and its request sent. Names are told
// apart by their length first.
func (h *head) parse(req bool) error {
	h.hdrs = h.hdrs[:0]
	h.contentLength, h.chunked, h.close, h.upgrade, h.trailerHdr, h.oddMajor = -1, false, false, false, false, false
	h.requestID, h.hasHost, h.expect100, h.teTrailers, h.badFraming = nil, false, false, false, false
	var connUpgrade, keepAlive, hasUpgrade, clSeen, hasConn bool
	var te []byte
	teLines := 0
	badTrailer := false // a Trailer header that announces framing
	if h.afterEmpty && !req {
		return errBadHead
	}
	b := h.buf
	for i := 0; len(b) > 0; i++ {
		j := bytes.IndexByte(b, '\n')
		l := b[:j]
		b = b[j+1:]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		if len(l) == 0 {
			break
		}
		if i == 0 {
			if err := h.parseStartLine(l, req); err != nil {
				return err
			}
			continue
		}
		c := bytes.IndexByte(l, ':')
		if c <= 0 || !isToken(l[:c]) {
			return errBadHead // also rejects obs-fold (a line starting with a space)
		}
		name, value := l[:c], trimOWS(l[c+1:])
		if !validValue(value) {
			return errBadHead
		}
		x := hdr{name: name, value: value}
		switch len(name) {
		case 14:
			if eqFold(name, "Content-Length") {
				n, ok := parseLength(value)
				if !ok || clSeen && n != h.contentLength {
					return errBadHead
				}
				clSeen, h.contentLength, x.drop = true, n, true
			}
		case 17:
			switch {
			case eqFold(name, "Transfer-Encoding"):
				te, x.drop = value, true
				teLines++
			case req && eqFold(name, "X-Forwarded-Proto"):
				x.drop = true
			}
		case 10:
			switch {
			case eqFold(name, "Connection"):
				x.drop, hasConn = true, true
				for t := range bytes.SplitSeq(value, []byte(",")) {
					t = bytes.TrimSpace(t)
					switch {
					case eqFold(t, "close"):
						h.close = true
					case eqFold(t, "keep-alive"):
						keepAlive = true
					case eqFold(t, "upgrade"):
						connUpgrade = true
					}
				}
			case eqFold(name, "Keep-Alive"):
				x.drop = true
			}
		case 7:
			switch {
			case eqFold(name, "Upgrade"):
				hasUpgrade, x.drop = true, true
			case eqFold(name, "Trailer"):
				h.trailerHdr = true // framing of a chunked body, forwarded with it
				for t := range bytes.SplitSeq(value, []byte(",")) {
					t = bytes.TrimSpace(t)
					badTrailer = badTrailer || eqFold(t, "Content-Length") || eqFold(t, "Transfer-Encoding") || eqFold(t, "Trailer")
				}
			}
		case 16:
			x.drop = eqFold(name, "Proxy-Connection") || req && eqFold(name, "X-Forwarded-Host")
		case 18:
			x.drop = eqFold(name, "Proxy-Authenticate")
		case 19:
			x.drop = eqFold(name, "Proxy-Authorization")
		case 4:
			if req && eqFold(name, "Host") {
				if h.hasHost || !validHost(value) {
					return errBadHead // RFC 9112, 3.2: one valid Host
				}
				h.hasHost, x.drop = true, true
			}
		case 2:
			if req && eqFold(name, "Te") {
				x.drop = true
				for t := range bytes.SplitSeq(value, []byte(",")) {
					if eqFold(bytes.TrimSpace(t), "trailers") {
						h.teTrailers = true
					}
				}
			}
		case 6:
			if req && eqFold(name, "Expect") && eqFold(value, "100-continue") {
				h.expect100, x.drop = true, true
			}
		case 9:
			x.drop = req && eqFold(name, "Forwarded")
		case 15:
			x.drop = req && eqFold(name, "X-Forwarded-For")
		case 12:
			if req && h.requestID == nil && eqFold(name, "X-Request-Id") {
				h.requestID = value
			}
		}
		h.hdrs = append(h.hdrs, x)
	}
	if len(h.line[0]) == 0 {
		return errBadHead
	}
	if teLines > 0 {
		// Only one Transfer-Encoding line, and only chunked, as net/http
		// (and nginx) have it: every other coding, list or repetition is a
		// way of framing that a next hop may read otherwise (smuggling).
		// Nor in a message read as HTTP/1.0, whose framing RFC 9112, 6.1
		// calls faulty: net/http ignores the header below HTTP/1.1 and
		// reads the body as if it were not chunked (an answer until its
		// connection closes, chunk sizes and all). An answer of another
		// major version is read as HTTP/1.0 (parseVersion), so refused
		// too.
		if teLines > 1 || !eqFold(te, "chunked") || h.minor == 0 {
			return errEncoding
		}
		if clSeen {
			h.close = true // RFC 9112, 6.1: close after a message framed both ways
		}
		h.chunked, h.contentLength = true, -1 // chunked wins over a length
	}
	if badTrailer && h.chunked {
		// As net/http's fixTrailer: a request is answered 400, an answer
		// 502 (ReverseProxy's for its transport's error).
		return errBadHead
	}
	if !req {
		h.checkStatusFraming()
	}
	if h.oddMajor && req {
		return errVersion
	}
	if h.minor == 0 && !keepAlive || h.oddMajor {
		h.close = true
	}
	h.upgrade = connUpgrade && hasUpgrade
	if hasConn {
		h.dropConnectionNamed()
	}
	if req && h.minor == 1 && !h.hasHost {
		return errBadHead // HTTP/1.1 requires Host, and net/http enforces it
	}
	return nil
}

// dropConnectionNamed marks the headers named by a Connection header as
// hop-by-hop too, in time linear in the head: a few names are compared
// with each header, more are looked up in a set.
func (h *head) dropConnectionNamed() {
	var few [4][]byte
	var names map[string]struct{}
	n := 0
	for _, c := range h.hdrs {
		if !eqFold(c.name, "Connection") {
			continue
		}
		for t := range bytes.SplitSeq(c.value, []byte(",")) {
			if t = bytes.TrimSpace(t); len(t) == 0 {
				continue
			}
			if n < len(few) {
				few[n] = t
			} else {
				if names == nil {
					names = make(map[string]struct{})
					for _, f := range few {
						names[string(lowerInto(nil, f))] = struct{}{}
					}
				}
				names[string(lowerInto(nil, t))] = struct{}{}
			}
			n++
		}
	}
	var buf [64]byte
	for k := range h.hdrs {
		x := &h.hdrs[k]
		if x.drop {
			continue
		}
		if names != nil {
			_, x.drop = names[string(lowerInto(buf[:0], x.name))]
			continue
		}
		for _, t := range few[:n] {
			if eqFoldBytes(x.name, t) {
				x.drop = true
				break
			}
		}
	}
}

// lowerInto appends b in ASCII lower case to dst.
func lowerInto(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, lower(c))
	}
	return dst
}

// trimOWS trims spaces and tabs at both ends of a field value; an empty
// value is nil, as bytes.Trim has it (an empty X-Request-Id does not count
// as one).
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

// parseLength parses a Content-Length value, 1*DIGIT (RFC 9110, 8.6: no
// sign, no list), and reports whether it is one below 2^63.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false // 18 digits fit in an int64
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// checkStatusFraming drops the framing of an answer whose status has no
// body (1xx, 204: neither a length nor chunked; 304: not chunked, its
// length is the representation's), and marks one that came with it: the
// bytes that such framing announces would be read as the next answer.
func (h *head) checkStatusFraming() {
	switch s := h.status; {
	case s < 200 || s == http.StatusNoContent:
		h.badFraming = h.chunked || h.contentLength > 0
		h.chunked, h.contentLength = false, -1
	case s == http.StatusNotModified:
		h.badFraming = h.chunked
		h.chunked = false
	}
}

func (h *head) parseStartLine(l []byte, req bool) error {
	h.line = [3][]byte{}
	a := bytes.IndexByte(l, ' ')
	if a <= 0 {
		return errBadHead
	}
	rest := l[a+1:]
	b := bytes.IndexByte(rest, ' ')
	if req {
		if b <= 0 {
			return errBadHead
		}
		method, target, version := l[:a], rest[:b], rest[b+1:]
		if !isToken(method) || !validTarget(target) || target[0] == '/' && !validEscapes(target) ||
			string(target) == "*" && string(method) != http.MethodOptions { // RFC 9112, 3.2.4
			return errBadHead
		}
		h.line = [3][]byte{method, target, version}
		return h.parseVersion(version)
	}
	version := l[:a]
	code := rest
	var reason []byte
	if b >= 0 {
		code, reason = rest[:b], rest[b+1:]
	}
	if len(code) != 3 || code[0] < '1' || code[0] > '9' || code[1] < '0' || code[1] > '9' || code[2] < '0' || code[2] > '9' {
		return errBadHead
	}
	n := int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if !validValue(reason) {
		// A CR or another control byte in the reason phrase (RFC 9112,
		// 4: HTAB, SP, VCHAR, obs-text) would go to the client as it came
		// (a bare CR ends a line for some readers: a header injected).
		reason = []byte(http.StatusText(n))
	}
	h.status = n
	h.line = [3][]byte{version, code, reason}
	return h.parseVersion(version)
}

func (h *head) parseVersion(v []byte) error {
	switch string(v) {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
		h.minor = 0
	default:
		// HTTP/d.d, as net/http reads it: a later 1.x is 1.1 (RFC 9110,
		// 2.5); another major version is refused in a request (505) and,
		// in an answer, read with HTTP/1.0's rules and closed after.
		if len(v) != len("HTTP/1.1") || string(v[:5]) != "HTTP/" || v[6] != '.' ||
			v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
			return errVersion
		}
		h.minor = 1
		if v[5] != '1' {
			h.minor, h.oddMajor = 0, true
		}
	}
	return nil
}

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tchar[c] {
			return false
		}
	}
	return true
}

// tchar holds the characters of a token (RFC 9110, 5.6.2).
var tchar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

// validValue rejects control characters other than HTAB in a field value.
func validValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validEscapes reports whether every '%' in the path of an origin-form
// target starts a %XX escape, as url.ParseRequestURI (net/http's server)
// requires; the query is not checked.
func validEscapes(t []byte) bool {
	if q := bytes.IndexByte(t, '?'); q >= 0 {
		t = t[:q]
	}
	for i := bytes.IndexByte(t, '%'); i >= 0; i = bytes.IndexByte(t, '%') {
		if i+2 >= len(t) || !ishex(t[i+1]) || !ishex(t[i+2]) {
			return false
		}
		t = t[i+3:]
	}
	return true
}

// validHost reports whether a Host value has only the bytes that
// net/http's server accepts in one (httpguts.ValidHostHeader).
func validHost(b []byte) bool {
	for _, c := range b {
		if !hostByte[c] {
			return false
		}
	}
	return true
}

var hostByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!$%&'()*+,-.:;=[]_~", byte(c)) >= 0
	}
	return t
}()

// validTarget accepts a request target without spaces or control
// characters.
func validTarget(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// eqFold compares an ASCII header name or token case-insensitively.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func eqFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// header returns the first value of header name in h.
func (h *head) header(name string) []byte {
	for _, x := range h.hdrs {
		if eqFold(x.name, name) {
			return x.value
		}
	}
	return nil
}

// bodyless reports whether a response to method with this status has no
// body whatever its headers say.
func bodyless(method []byte, status int) bool {
	return string(method) == http.MethodHead || status >= 100 && status < 200 || status == 204 || status == 304
}
