package main

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `version` and `--version` print the same line: the
// version, the commit when the build recorded one, and the Go toolchain.
func TestVersion(t *testing.T) {
	stdout := func(args ...string) string {
		root := newRootCmd()
		root.SetArgs(args)
		var b bytes.Buffer
		root.SetOut(&b)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return b.String()
	}
	out := stdout("version")
	want := regexp.MustCompile(`^bulkheadlab \S+( \(commit [0-9a-f]{1,12}(\+dirty)?(, \S+)?\))?, ` + regexp.QuoteMeta(runtime.Version()) + ` \w+/\w+\n$`)
	if !want.MatchString(out) {
		t.Errorf("version printed %q, want it to match %s", out, want)
	}
	if flag := stdout("--version"); flag != out {
		t.Errorf("--version printed %q; want %q", flag, out)
	}
	if code, out := execute(t, "version", "extra"); code != ExitUsage || !strings.Contains(out, "unknown command") && !strings.Contains(out, "accepts 0 arg") {
		t.Errorf("version extra: exit %d, %q; want a usage error", code, out)
	}
}
