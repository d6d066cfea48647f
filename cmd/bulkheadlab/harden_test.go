package main

// Hostile and careless inputs (issue "Hardening"): each gives a usage error
// (exit 2) naming the flag, file or field, found before anything starts.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostileInputsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	aFile := writeFile(t, dir, "plain.txt", "x")
	ok := writeFile(t, dir, "ok.yaml", "name: ok\nconditions: [slow]\nmodes: [shared]\nphases: {warmup: 100ms, baseline: 100ms, fault: 250ms, recovery: 100ms}\n")
	external := "name: ext\nmodes: [shared]\nexternal:\n  targets: {a: 'http://127.0.0.1:1/a', b: 'http://127.0.0.1:1/b'}\n  upstreams: {A: 'http://127.0.0.1:2', B: 'http://127.0.0.1:3'}\n  proxies: {A: '127.0.0.1:4', B: '127.0.0.1:5'}\n"
	ext := writeFile(t, dir, "ext.yaml", external)
	remote := t.TempDir()
	writeFile(t, remote, rundata.SpecFile, strings.Replace(external, "http://127.0.0.1:1/a", "http://10.1.2.3:80/a", 1))
	writeFile(t, remote, rundata.IndexFile, `{"experiment":"ext","runs":[{"id":"healthy-shared-r1","mode":"shared","condition":"healthy","repeat":1,"status":"pending"}]}`)
	var b strings.Builder
	// Its own phases, so that its estimate (800 runs of 22 s, ≈ 5 h) does
	// not follow the defaults under --max-duration.
	b.WriteString("name: many\nphases: {warmup: 2s, baseline: 5s, fault: 10s, recovery: 5s}\nconditions:\n")
	for i := range 400 {
		b.WriteString("  - {name: c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ", rates: {a: 10}}\n")
	}
	big := writeFile(t, dir, "many.yaml", b.String())
	twoDocs := writeFile(t, dir, "two.yaml", "name: t\n---\nrepeats: -5\n")
	zero := writeFile(t, dir, "zero.yaml", "name: z\nservice:\n  pool_size: 0\n")
	negRate := writeFile(t, dir, "neg.yaml", "name: n\nload:\n  rates: {a: -5}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the message (exit 2 in every case)
	}{
		{"validate /dev/zero", []string{"validate", "/dev/zero"}, "not a regular file"},
		{"validate a fifo", []string{"validate", fifo}, "not a regular file"},
		{"second document", []string{"validate", twoDocs}, "two.yaml:2: a second YAML document"},
		{"explicit zero", []string{"validate", zero}, "zero.yaml:3: service.pool_size: must be between 1 and 100000, got 0"},
		{"negative rate named where written", []string{"validate", negRate}, "neg.yaml:3: load.rates.a"},
		{"matrix too long", []string{"validate", big}, "more than --max-duration"},
		{"serve on every interface", []string{"serve", "--listen", ":0", "--dep-a", "http://127.0.0.1:1", "--dep-b", "http://127.0.0.1:2"}, "--allow-remote"},
		{"dep on every interface", []string{"dep", "--listen", "0.0.0.0:0"}, "--allow-remote"},
		{"serve calls a remote dependency", []string{"serve", "--dep-a", "http://10.1.2.3:80", "--dep-b", "http://127.0.0.1:2"}, "--allow-remote"},
		{"junit path not writable", []string{"run", ok, "--junit", filepath.Join(aFile, "x.xml"), "--out", dir}, "--junit"},
		{"out not writable", []string{"run", ok, "--out", "/dev/null/x"}, "--out"},
		{"in-process external", []string{"run", ext, "--in-process", "--out", dir}, "--in-process"},
		{"resume of a remote spec", []string{"run", "--resume", remote}, "--allow-remote"},
		{"report --out a file", []string{"report", dir, "--out", aFile}, "--out"},
		{"report --run-figures negative", []string{"report", dir, "--run-figures", "-5"}, "--run-figures"},
		{"stray argument", []string{"list", "extra"}, `takes no arguments, got "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, msg := execute(t, tc.args...)
			if code != ExitUsage || !strings.Contains(msg, tc.want) {
				t.Errorf("bulkheadlab %s: exit %d %q; want exit %d containing %q", strings.Join(tc.args, " "), code, msg, ExitUsage, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s: usage errors must be found before anything starts", d)
			}
		})
	}
}

// TestPresetShadowing: a file named like a preset in the working directory
// is ambiguous for a bare name, and ./name loads the file.
func TestPresetShadowing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, "ci-regression", "name: mine\n")
	if code, msg := execute(t, "validate", "ci-regression"); code != ExitUsage || !strings.Contains(msg, "ambiguous") {
		t.Errorf("bare name shadowed by a file: exit %d %q, want a usage error", code, msg)
	}
	if code, _ := execute(t, "validate", "./ci-regression"); code != ExitOK {
		t.Errorf("./ci-regression (the file): exit %d, want 0", code)
	}
}
