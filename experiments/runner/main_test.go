package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// helperEnv switches the test binary into a helper child process.
const helperEnv = "EXPERIMENTS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "serve":
		os.Exit(helperServe())
	case "silent":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "parent":
		os.Exit(helperParent())
	case "command":
		os.Exit(helperCommand())
	case "closer":
		os.Exit(helperCloser())
	case "hog":
		os.Exit(helperHog())
	case "hog-parent":
		os.Exit(helperHogParent())
	case "exit1":
		fmt.Println("failing at once")
		os.Exit(1)
	default:
		os.Exit(3)
	}
}

// helperServe acts as a component: announce, serve /healthz, exit 0 on
// SIGTERM.
func helperServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, os.Getenv(ctlauth.EnvToken)) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	if err := announce.Write(os.Stdout, announce.Announcement{Component: "dep", Name: "T", Addr: ln.Addr().String()}); err != nil {
		return 1
	}
	fmt.Println("after the announcement")
	fmt.Fprintln(os.Stderr, "to stderr")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}

// helperParent starts a serving child through a Supervisor, prints the
// child's pid and waits to be killed.
func helperParent() int {
	sup := &Supervisor{Executable: os.Args[0], Env: []string{helperEnv + "=serve"}}
	c, err := sup.Start(context.Background(), ChildSpec{Name: "grandchild", Args: []string{"-test.run=^$"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(c.PID())
	time.Sleep(time.Minute)
	return 0
}

func testSupervisor(mode string) *Supervisor {
	return &Supervisor{Executable: os.Args[0], Env: []string{helperEnv + "=" + mode},
		AnnounceTimeout: 20 * time.Second, HealthTimeout: 20 * time.Second}
}

// processGone reports whether pid no longer runs (absent or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	// the state follows the parenthesised command name
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return false
}

// waitGone polls until pid is gone or the deadline passes.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %s", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// helperCommand acts as a user's service started by its own command: no
// announcement; it listens on $CMD_LISTEN, answers /ready 503 twice and
// then 200 (and every other path 200), prints $CMD_WORD, and exits 0 on
// SIGTERM.
func helperCommand() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", os.Getenv("CMD_LISTEN"))
	if err != nil {
		return 1
	}
	polls := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if polls++; polls <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Println("word:", os.Getenv("CMD_WORD"))
	fmt.Printf("token: %q\n", os.Getenv(ctlauth.EnvToken))
	<-ctx.Done()
	_ = srv.Close()
	return 0
}

// helperCloser acts as a broken service started by its own command: it
// listens on $CMD_LISTEN and answers /ready 200, but closes the connection
// of every other request without an answer; it exits 0 on SIGTERM.
func helperCloser() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", os.Getenv("CMD_LISTEN"))
	if err != nil {
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	<-ctx.Done()
	_ = srv.Close()
	return 0
}

// inProcess is an InProcessLauncher with a token, as the runner's: the
// fault switches, the sampler and the calibration must send it.
func inProcess() *InProcessLauncher { return &InProcessLauncher{Token: ctlauth.NewToken()} }
