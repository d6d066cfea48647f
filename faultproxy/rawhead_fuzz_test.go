package faultproxy

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"testing"
)

// FuzzHeadParse holds the head parser to net/http's (http.ReadRequest and
// http.ReadResponse): for any bytes read as a request or a response head,
// a head that parse accepts is one that net/http accepts too, framed the
// same way (chunked or not, the same Content-Length, closing when
// net/http closes). parse may reject more (obs-fold, a Transfer-Encoding
// on HTTP/1.0, a status below 100): a rejected message cannot be read two
// ways.
func FuzzHeadParse(f *testing.F) {
	for _, s := range []string{
		benchRequestHead, benchResponseHead,
		"GET / HTTP/1.0\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n\r\n",
		"POST /u?q=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nTe: trailers, deflate\r\nExpect: 100-continue\r\n\r\n",
		"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nProxy-Connection: x\r\nProxy-Authorization: y\r\n\r\n",
		"PUT / HTTP/1.1\r\nhost: h\r\ncontent-length: 5\r\nContent-Length: 5\r\nX-Forwarded-For: a\r\nForwarded: b\r\nX-Forwarded-Host: c\r\nX-Forwarded-Proto: d\r\nX-Request-ID: r1\r\nx-request-id: r2\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\nProxy-Authenticate: z\r\n\r\n",
		"HTTP/1.0 204\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: \r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\nHost:\t h \t\nX: a\x01b\n\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nContent-Length: +7\r\n\r\n",
		"\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, req bool) {
		var h head
		br := bufio.NewReaderSize(bytes.NewReader(raw), 4<<10)
		if readHead(br, &h) != nil || h.parse(req) != nil {
			return
		}
		if req && h.line[1][0] != '/' {
			if _, err := url.ParseRequestURI(string(h.line[1])); err != nil && string(h.line[1]) != "*" {
				return // forwardRaw answers 400 (outTarget)
			}
		}
		// A request is compared from its request line on (net/http skips
		// empty lines before one only after a POST), an answer whole.
		nr := bufio.NewReader(bytes.NewReader(h.buf))
		if !req {
			nr = bufio.NewReader(bytes.NewReader(raw))
		}
		var chunked, closing bool
		var length int64
		if req {
			r, err := http.ReadRequest(nr)
			if err != nil {
				t.Fatalf("%q: parse accepts the request, net/http: %v", raw, err)
			}
			chunked, closing, length = len(r.TransferEncoding) > 0, r.Close, r.ContentLength
			if !h.chunked && h.contentLength < 0 {
				h.contentLength = 0 // a request without framing has no body
			}
		} else {
			r, err := http.ReadResponse(nr, nil)
			if err != nil {
				t.Fatalf("%q: parse accepts the answer, net/http: %v", raw, err)
			}
			r.Body.Close()
			if bodyless(nil, h.status) {
				return // no body whatever the framing says
			}
			chunked, closing, length = len(r.TransferEncoding) > 0, r.Close, r.ContentLength
			closing = closing && (h.chunked || h.contentLength >= 0) // else relayAnswer closes: read until EOF
		}
		if h.chunked != chunked || !h.chunked && h.contentLength != length || closing && !h.close {
			t.Fatalf("%q (request %v): parse has chunked %v, length %d, close %v; net/http %v, %d, %v",
				raw, req, h.chunked, h.contentLength, h.close, chunked, length, closing)
		}
	})
}
