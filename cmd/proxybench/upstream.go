package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// upstreamBody is what the upstream answers: 64 bytes, as the harness's
// dependency stub does by default.
var upstreamBody = strings.Repeat("x", 64)

// upstreamHandler answers every request at once with 200 and upstreamBody.
func upstreamHandler(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{"64"}
	_, _ = io.WriteString(w, upstreamBody)
}

// runUpstream is the child mode `proxybench upstream`: a zero-latency HTTP
// server on a free loopback port. It prints {"addr":"host:port"} as its
// first stdout line and serves until SIGTERM or SIGINT.
func runUpstream() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hs := &http.Server{Handler: http.HandlerFunc(upstreamHandler), ReadHeaderTimeout: 10 * time.Second}
	b, _ := json.Marshal(map[string]string{"addr": l.Addr().String()})
	if _, err := fmt.Fprintf(os.Stdout, "%s\n", b); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	case err := <-errc:
		return err
	}
}
