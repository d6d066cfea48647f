package faultproxy

import (
	"bufio"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPPlaneStalledBody: on the net/http data plane (an https upstream
// or a custom transport; here a plain server over the proxy, with and
// without its own HTTP/1 client), a client that announces a body and stops
// sending it is answered 408 once it has sent nothing for the body idle
// timeout, and counted as a stalled_body client error, not an upstream
// error; a body that comes slowly but steadily passes, and so does an
// upstream that takes longer than the timeout to answer once the body came
// whole (the deadline is cleared when the body ends).
func TestHTTPPlaneStalledBody(t *testing.T) {
	const d = 300 * time.Millisecond
	for _, ownClient := range []bool{true, false} {
		e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
			for {
				r, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				b, err := io.ReadAll(r.Body)
				if err != nil {
					return
				}
				if r.URL.Path == "/slow" {
					time.Sleep(2 * d)
				}
				msg := "got " + itoa(len(b))
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+itoa(len(msg))+"\r\n\r\n"+msg)
			}
		}))
		if !ownClient {
			e.p.h1 = nil // the transport carries the requests
		}
		e.p.bodyIdleTimeout = d
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: e.p, ErrorLog: log.New(io.Discard, "", 0)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		send := func(name string, parts []string, gap time.Duration) (*http.Response, time.Duration, string) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			for i, p := range parts {
				if i > 0 {
					time.Sleep(gap)
				}
				_, _ = io.WriteString(conn, p)
			}
			resp, err := finalAnswer(bufio.NewReader(conn))
			if err != nil {
				t.Fatalf("own client %v, %s: %v after %v", ownClient, name, err, time.Since(start))
			}
			b, _ := io.ReadAll(resp.Body)
			return resp, time.Since(start), string(b)
		}
		const head = "POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
		before := clientErrors(e.p)
		upErrs := val(e.p.m.upstreamErrors)
		resp, took, _ := send("stalled", []string{head + "hello"}, 0)
		if resp.StatusCode != http.StatusRequestTimeout || took < d-d/120 || took > 5*time.Second {
			t.Errorf("own client %v, stalled after half the body: %d after %v, want 408 after %v", ownClient, resp.StatusCode, took, d)
		}
		if msg := refusedOnce(e.p, before, reasonStalledBody); msg != "" || val(e.p.m.upstreamErrors) != upErrs {
			t.Errorf("own client %v, stalled: %s; upstream errors +%v, want none", ownClient, msg, val(e.p.m.upstreamErrors)-upErrs)
		}
		// 5 parts, 2 bytes each, 150 ms apart: 600 ms in all, each gap
		// half the timeout.
		parts := []string{head + "he", "ll", "ow", "or", "ld"}
		resp, took, body := send("slow but steady", parts, d/2)
		if resp.StatusCode != http.StatusOK || body != "got 10" {
			t.Errorf("own client %v, a body in 5 parts %v apart (%v in all): %d %q, want 200 got 10", ownClient, d/2, took, resp.StatusCode, body)
		}
		resp, took, body = send("slow upstream", []string{strings.Replace(head, "/s ", "/slow ", 1) + "helloworld"}, 0)
		if resp.StatusCode != http.StatusOK || body != "got 10" {
			t.Errorf("own client %v, an upstream answering %v after the whole body: %d %q after %v, want 200 got 10", ownClient, 2*d, resp.StatusCode, body, took)
		}
	}
}

// TestHTTPPlaneTargetForm: the net/http data plane refuses a target that
// is neither a path nor an http(s) URI, as the raw plane does (400,
// counted as malformed), where net/http's server takes it; it forwards an
// http absolute-form target as its path.
func TestHTTPPlaneTargetForm(t *testing.T) {
	e := newRawEnv(t, rawUpstream(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			okFor(conn, r)
		}
	}))
	e.p.h1 = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e.p, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{"a:0", http.StatusBadRequest, ""},
		{"ftp://a/b", http.StatusBadRequest, ""},
		{"http://a/w?x=1", http.StatusOK, "for /w?x=1"},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		before := clientErrors(e.p)
		_, _ = io.WriteString(conn, "GET "+tc.target+" HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		conn.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(b) != tc.body {
			t.Errorf("GET %s: %d %q, want %d %q", tc.target, resp.StatusCode, b, tc.status, tc.body)
		}
		reason := ""
		if tc.status == http.StatusBadRequest {
			reason = reasonMalformed
		}
		if msg := refusedOnce(e.p, before, reason); msg != "" {
			t.Errorf("GET %s: %s", tc.target, msg)
		}
	}
}
