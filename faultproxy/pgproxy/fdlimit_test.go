//go:build linux

package pgproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// fdHelperEnv makes the test binary a proxy under a low file-descriptor
// limit (see helperAtFDLimit); its value is the upstream's address.
const fdHelperEnv = "PGPROXY_FDLIMIT_UPSTREAM"

// helperFDLimit is the helper's RLIMIT_NOFILE.
const helperFDLimit = 256

func init() {
	if up := os.Getenv(fdHelperEnv); up != "" {
		os.Exit(helperAtFDLimit(up))
	}
}

// helperAtFDLimit serves a proxy to up with at most helperFDLimit file
// descriptors, prints its data and control addresses, and serves until its
// stdin closes.
func helperAtFDLimit(up string) int {
	rl := syscall.Rlimit{Cur: helperFDLimit, Max: helperFDLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	p, err := New(Config{Upstream: up, Seed: 1, Token: os.Getenv(ctlauth.EnvToken), ErrorLog: log.New(io.Discard, "", 0)})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	srv, err := Listen(p, "127.0.0.1:0", "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println(srv.Addr(), srv.ControlAddr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return 0
}

// TestControlAnswersAtFDLimit: with clients holding more connections than
// the process has file descriptors for, the control API still answers at
// once, its token checked: the data plane keeps to its budget and leaves
// the rest waiting in the listen queue.
func TestControlAnswersAtFDLimit(t *testing.T) {
	var mu sync.Mutex
	var upConns []net.Conn
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var uwg sync.WaitGroup
	uwg.Go(func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			upConns = append(upConns, c)
			mu.Unlock()
		}
	})
	defer func() {
		ul.Close()
		uwg.Wait()
		mu.Lock()
		for _, c := range upConns {
			c.Close()
		}
		mu.Unlock()
	}()

	tok := ctlauth.NewToken()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fdHelperEnv+"="+ul.Addr().String(), ctlauth.EnvToken+"="+tok)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addrs := strings.Fields(line)
	if err != nil || len(addrs) != 2 {
		t.Fatalf("the helper said %q, %v", line, err)
	}
	data, control := addrs[0], "http://"+addrs[1]

	const clients = 2 * helperFDLimit // more than the helper could hold
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range clients {
		c, err := net.DialTimeout("tcp", data, 5*time.Second)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	for i := range 5 {
		req, _ := http.NewRequest(http.MethodPut, control+"/faults", strings.NewReader(`{"faults":[{"type":"latency","latency":"5ms"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("call %d: PUT /faults with %d clients connected: %v", i, clients, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("call %d: PUT /faults: %s", i, resp.Status)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("call %d: PUT /faults took %v with %d clients connected", i, d, clients)
		}
		hc.CloseIdleConnections() // a new connection each time: the control listener must still accept
	}
}
