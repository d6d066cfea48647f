package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunUsageErrors: bad arguments to `run` exit 2 before anything starts,
// with a message naming the flag, preset or file.
func TestRunUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	remote := write("remote.yaml", "name: remote\nmodes: [shared]\nexternal:\n"+
		"  targets: {a: 'http://192.0.2.1:8080/a', b: 'http://192.0.2.1:8080/b'}\n"+
		"  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n"+
		"  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n")
	bad := write("bad.yaml", "name: bad\nservice:\n  pool: 3\n")
	out := filepath.Join(tmp, "results")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "no-such-preset"}, "no-such-preset"},
		{[]string{"run", bad}, "bad.yaml:3: service.pool: unknown field"},
		{[]string{"run", "ci-regression", "--repeats", "-1"}, "--repeats"},
		// 0 is no "use the spec's repeats": the spec itself refuses repeats: 0.
		// (--max-duration 1ns: were 0 let through, it must not start the matrix.)
		{[]string{"run", "ci-regression", "--repeats", "0", "--max-duration", "1ns"}, "--repeats: must be ≥ 1, got 0"},
		{[]string{"run", "--resume", tmp, "--repeats", "0"}, "--repeats"},
		{[]string{"run", "ci-regression", "--resume", tmp}, "--resume"},
		{[]string{"run", "--resume", filepath.Join(tmp, "missing")}, "--resume"},
		{[]string{"run", remote, "--out", out}, "--allow-remote"},
		{[]string{"run", "--repeats", "x"}, "--repeats"},
	}
	for _, tt := range tests {
		code, msg := execute(t, tt.args...)
		if code != ExitUsage || !strings.Contains(msg, tt.want) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %q", strings.Join(tt.args, " "), code, msg, ExitUsage, tt.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run created %s", out)
	}
}

// TestArgCountIsUsageError: a wrong number of arguments, or an unknown
// subcommand, is a user error (exit 2), like a bad flag.
func TestArgCountIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"run", "a", "b"}, {"frob"}, {"list", "x"}, {"proxy", "x"}, {"size", "x"}} {
		if code, msg := execute(t, args...); code != ExitUsage {
			t.Errorf("bulkheadlab %s: exit %d %q, want %d", strings.Join(args, " "), code, msg, ExitUsage)
		}
	}
}
