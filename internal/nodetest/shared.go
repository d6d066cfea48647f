//go:build kube

package nodetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var shared struct {
	sync.Mutex
	main    bool
	started bool
	n       *Node
	err     error
}

// Shared returns the test binary's one node, starting it on first use
// (from the module of the test's working directory). Without what it
// needs the test is skipped, or fails when the environment sets CI. The
// package's TestMain must call Main, which stops the node.
func Shared(t testing.TB) *Node {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		t.Fatal("nodetest.Shared needs the package's TestMain to call nodetest.Main(m)")
	}
	if !shared.started {
		shared.started = true
		shared.err = errors.New("no module")
		if mod, err := moduleDir(); err != nil {
			shared.err = err
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a first build of the image included
			shared.n, shared.err = Start(ctx, mod)
			cancel()
			if shared.n != nil {
				fmt.Fprintf(os.Stderr, "nodetest: node started in %s\n", shared.n.StartTime.Round(time.Millisecond))
			}
		}
	}
	if shared.err != nil {
		if errors.Is(shared.err, ErrUnavailable) && os.Getenv("CI") == "" {
			t.Skipf("skipping the real-node test: %v", shared.err)
		}
		t.Fatal(shared.err)
	}
	return shared.n
}

// Main runs the tests (m.Run), stops the shared node, then exits.
func Main(m *testing.M) {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	if shared.n != nil {
		begin := time.Now()
		if err := shared.n.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		fmt.Fprintf(os.Stderr, "nodetest: node stopped in %s\n", time.Since(begin).Round(time.Millisecond))
	}
	shared.Unlock()
	os.Exit(code)
}

// moduleDir is the root of the module of the working directory.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("nodetest: not in a module")
	}
	return filepath.Dir(mod), nil
}
