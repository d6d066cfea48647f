package faultproxy_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Example puts a proxy in front of an upstream and switches a fault on and
// off through the control API's Go client.
func Example() {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	p, err := faultproxy.New(faultproxy.Config{Upstream: u, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := faultproxy.Listen(p, "127.0.0.1:0", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	defer func() {
		hc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	ctl := faultproxy.NewClient(srv.ControlAddr(), hc)
	get := func() {
		resp, err := hc.Get("http://" + srv.Addr() + "/")
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(b))
	}

	ctx := context.Background()
	get()
	_ = ctl.Set(ctx, []faultproxy.Fault{{Type: faultproxy.TypeError, Percent: 100, Params: faultproxy.Reply{Status: 503, Body: "injected"}}})
	get()
	err = ctl.Set(ctx, []faultproxy.Fault{{Type: faultproxy.TypeLatency, Percent: 100, Params: faultproxy.Delay{Latency: 10 * time.Millisecond, Jitter: time.Second}}})
	fmt.Println(err)
	_ = ctl.Clear(ctx)
	get()
	// Output:
	// 200 hello
	// 503 injected
	// faults[0].jitter: 1s exceeds latency 10ms: a uniform delay would be negative
	// 200 hello
}
