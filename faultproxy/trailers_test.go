package faultproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRawTrailersThatFrameOrRoute: request trailers that would change a
// next hop's framing or routing are dropped, and so are an answer's; a
// message that declares a framing field as its trailer is refused, as
// net/http refuses it: 400 for a request, 502 for an answer.
func TestRawTrailersThatFrameOrRoute(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // path → trailer names the upstream got
	addr := rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, r.Body)
			var names []string
			for k, vv := range r.Trailer {
				if len(vv) > 0 { // a declared name has no value unless sent
					names = append(names, k)
				}
			}
			slices.Sort(names)
			mu.Lock()
			seen[r.URL.Path] = names
			mu.Unlock()
			switch r.URL.Path {
			case "/declares-length":
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nContent-Length: 9\r\n\r\n")
			case "/answer-trailers":
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nTrailer: X-Ok\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"+
					"Connection: close\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\nHost: evil.example\r\nProxy-Foo: 1\r\nX-Ok: 1\r\n\r\n")
			default:
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	e := newRawEnv(t, addr)
	send := func(head, body string) string {
		conn, br := rawDial(t, e)
		_, _ = io.WriteString(conn, head+"Host: x\r\nConnection: close\r\n\r\n"+body)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(br)
		return string(b)
	}
	const chunkedBody = "2\r\nhi\r\n0\r\n"
	for _, tc := range []struct {
		name, head, body string
		status           string   // the client's answer's status line prefix
		upstream         []string // the trailer names the upstream got; nil: no request reached it
		answerHas        []string
		answerHasNot     []string
	}{
		{name: "request trailers", head: "POST /req HTTP/1.1\r\nTrailer: X-Ok, Host\r\nTransfer-Encoding: chunked\r\n",
			body:   chunkedBody + "Host: evil.example\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nTe: trailers\r\nUpgrade: h2c\r\nKeep-Alive: 1\r\nProxy-Authorization: x\r\nTrailer: X-A\r\nX-Ok: 1\r\n\r\n",
			status: "HTTP/1.1 200 ", upstream: []string{"X-Ok"}},
		{name: "a request declaring Content-Length", head: "POST /decl HTTP/1.1\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n",
			body: chunkedBody + "\r\n", status: "HTTP/1.1 400 "},
		{name: "a request declaring Transfer-Encoding", head: "POST /decl2 HTTP/1.1\r\nTrailer: X-A, transfer-encoding\r\nTransfer-Encoding: chunked\r\n",
			body: chunkedBody + "\r\n", status: "HTTP/1.1 400 "},
		{name: "an answer declaring Content-Length", head: "GET /declares-length HTTP/1.1\r\n", status: "HTTP/1.1 502 ", upstream: []string{}},
		{name: "answer trailers", head: "GET /answer-trailers HTTP/1.1\r\n", status: "HTTP/1.1 200 ", upstream: []string{},
			answerHas: []string{"\r\nX-Ok: 1\r\n"}, answerHasNot: []string{"evil.example", "Content-Length: 9", "Proxy-Foo", "\r\n0\r\nConnection", "Transfer-Encoding: chunked\r\n\r\n"}},
	} {
		got := send(tc.head, tc.body)
		if !strings.HasPrefix(got, tc.status) {
			t.Errorf("%s: the client got %q, want %q…", tc.name, got, tc.status)
		}
		path := strings.Fields(tc.head)[1]
		mu.Lock()
		names, reached := seen[path]
		mu.Unlock()
		if reached != (tc.upstream != nil) || tc.upstream != nil && !slices.Equal(names, tc.upstream) && !(len(names) == 0 && len(tc.upstream) == 0) {
			t.Errorf("%s: the upstream got trailers %q (reached %v), want %q", tc.name, names, reached, tc.upstream)
		}
		for _, s := range tc.answerHas {
			if !strings.Contains(got, s) {
				t.Errorf("%s: the client got %q, want %q in it", tc.name, got, s)
			}
		}
		for _, s := range tc.answerHasNot {
			if strings.Contains(got, s) {
				t.Errorf("%s: the client got %q, with %q", tc.name, got, s)
			}
		}
	}
}
