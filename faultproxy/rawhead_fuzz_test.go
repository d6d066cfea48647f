package faultproxy

import (
	"bufio"
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzHeadParse holds the single-pass head parser to the one it replaced
// (parseRef, kept here): for any bytes read as a request or a response
// head, both accept or reject alike and agree on every field, header and
// drop mark.
func FuzzHeadParse(f *testing.F) {
	for _, s := range []string{
		benchRequestHead, benchResponseHead,
		"GET / HTTP/1.0\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n\r\n",
		"POST /u?q=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nTe: trailers, deflate\r\nExpect: 100-continue\r\n\r\n",
		"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nProxy-Connection: x\r\nProxy-Authorization: y\r\n\r\n",
		"PUT / HTTP/1.1\r\nhost: h\r\ncontent-length: 5\r\nContent-Length: 5\r\nX-Forwarded-For: a\r\nForwarded: b\r\nX-Forwarded-Host: c\r\nX-Forwarded-Proto: d\r\nX-Request-ID: r1\r\nx-request-id: r2\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\nProxy-Authenticate: z\r\n\r\n",
		"HTTP/1.0 204\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\nHost:\t h \t\nX: a\x01b\n\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nContent-Length: +7\r\n\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, req bool) {
		var a, b head
		br := bufio.NewReaderSize(bytes.NewReader(raw), 4<<10)
		if readHead(br, &a) != nil {
			return
		}
		b.buf = append([]byte(nil), a.buf...)
		errA, errB := a.parse(req), b.parseRef(req)
		if errA != errB {
			t.Fatalf("%q (request %v): parse %v, the earlier parser %v", raw, req, errA, errB)
		}
		if errA != nil {
			return
		}
		a.buf, b.buf = nil, nil
		if len(a.hdrs) == 0 && len(b.hdrs) == 0 {
			a.hdrs, b.hdrs = nil, nil
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q (request %v):\nparse      %+v\nearlier    %+v", raw, req, a, b)
		}
	})
}

func isTokenRef(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// linesRef calls f for each line of h.buf without its line end.
func (h *head) linesRef(f func(i int, l []byte) error) error {
	b := h.buf
	for i := 0; len(b) > 0; i++ {
		j := bytes.IndexByte(b, '\n')
		l := b[:j]
		b = b[j+1:]
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		if len(l) == 0 {
			return nil
		}
		if err := f(i, l); err != nil {
			return err
		}
	}
	return nil
}

// parseRef is the head parser as it was before the single-pass one
// (parse): the differential fuzz test holds parse to it.
func (h *head) parseRef(req bool) error {
	h.hdrs = h.hdrs[:0]
	h.contentLength, h.chunked, h.close, h.upgrade, h.trailerHdr = -1, false, false, false, false
	h.requestID, h.hasHost, h.expect100, h.teTrailers = nil, false, false, false
	var connUpgrade, keepAlive, hasUpgrade, clSeen bool
	var te []byte
	err := h.linesRef(func(i int, l []byte) error {
		if i == 0 {
			return h.parseStartLine(l, req)
		}
		c := bytes.IndexByte(l, ':')
		if c <= 0 || !isTokenRef(l[:c]) {
			return errBadHead // also rejects obs-fold (a line starting with a space)
		}
		name, value := l[:c], bytes.Trim(l[c+1:], " \t")
		if !validValue(value) {
			return errBadHead
		}
		x := hdr{name: name, value: value}
		switch {
		case eqFold(name, "Content-Length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || clSeen && n != h.contentLength {
				return errBadHead
			}
			clSeen, h.contentLength, x.drop = true, n, true
		case eqFold(name, "Transfer-Encoding"):
			te, x.drop = value, true
		case eqFold(name, "Connection"):
			x.drop = true
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
		case eqFold(name, "Upgrade"):
			hasUpgrade, x.drop = true, true
		case eqFold(name, "Keep-Alive"), eqFold(name, "Proxy-Connection"),
			eqFold(name, "Proxy-Authenticate"), eqFold(name, "Proxy-Authorization"):
			x.drop = true
		case eqFold(name, "Trailer"):
			h.trailerHdr = true // framing of a chunked body, forwarded with it
		case req && eqFold(name, "Host"):
			h.hasHost, x.drop = true, true
		case req && eqFold(name, "Te"):
			x.drop = true
			for t := range bytes.SplitSeq(value, []byte(",")) {
				if eqFold(bytes.TrimSpace(t), "trailers") {
					h.teTrailers = true
				}
			}
		case req && eqFold(name, "Expect"):
			if eqFold(value, "100-continue") {
				h.expect100, x.drop = true, true
			}
		case req && (eqFold(name, "Forwarded") || eqFold(name, "X-Forwarded-For") ||
			eqFold(name, "X-Forwarded-Host") || eqFold(name, "X-Forwarded-Proto")):
			x.drop = true
		case req && eqFold(name, "X-Request-Id"):
			if h.requestID == nil {
				h.requestID = value
			}
		}
		h.hdrs = append(h.hdrs, x)
		return nil
	})
	if err != nil {
		return err
	}
	if len(h.line[0]) == 0 {
		return errBadHead
	}
	if te != nil {
		if !eqFold(te, "chunked") || h.minor == 0 && req {
			return errEncoding
		}
		h.chunked, h.contentLength = true, -1 // chunked wins over a length
	}
	if h.minor == 0 && !keepAlive {
		h.close = true
	}
	h.upgrade = connUpgrade && hasUpgrade
	// Headers named by Connection are hop-by-hop too.
	for _, c := range h.hdrs {
		if !eqFold(c.name, "Connection") {
			continue
		}
		for t := range bytes.SplitSeq(c.value, []byte(",")) {
			t = bytes.TrimSpace(t)
			for k := range h.hdrs {
				if len(t) > 0 && eqFoldBytes(h.hdrs[k].name, t) {
					h.hdrs[k].drop = true
				}
			}
		}
	}
	if req && h.minor == 1 && !h.hasHost {
		return errBadHead // HTTP/1.1 requires Host, and net/http enforces it
	}
	return nil
}
