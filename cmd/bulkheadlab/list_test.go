package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/experiments/spec"
)

// internalWords are the project's own words, which mean nothing to a user
// reading --help or list.
var internalWords = []string{"seed-0", "seed 0", "beyond the material", "claim ("}

// TestListNamesEveryPreset: list says what every embedded preset answers in
// a user's words (presetQuestions has an entry for each, and none for a
// preset that is gone), names the default, and points at testing one's own
// service.
func TestListNamesEveryPreset(t *testing.T) {
	names := spec.PresetNames()
	for _, n := range names {
		if strings.TrimSpace(presetQuestions[n]) == "" {
			t.Errorf("presetQuestions: no entry for the preset %s: say what it answers", n)
		}
	}
	for n := range presetQuestions {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+n+" ") {
			t.Errorf("presetQuestions: %s is no preset any more: drop the entry", n)
		}
	}
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs([]string{"list"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatalf("list: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, n := range names {
		if !strings.Contains(text, n) {
			t.Errorf("list does not name %s:\n%s", n, text)
		}
	}
	for _, want := range []string{spec.DefaultPreset + " (default)", "bulkheadlab run my-spec.yaml", "docs/your-service.md"} {
		if !strings.Contains(text, want) {
			t.Errorf("list does not say %q:\n%s", want, text)
		}
	}
	for _, w := range internalWords {
		if strings.Contains(strings.ToLower(text), w) {
			t.Errorf("list speaks of %q, which a user cannot know:\n%s", w, text)
		}
	}
}

// TestHelpNamesYourService: the root command's help tells a user how to
// test their own service and names a page that exists.
func TestHelpNamesYourService(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs([]string{"--help"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	text := out.String()
	for _, want := range []string{"your own service", "bulkheadlab run my-spec.yaml", "external:", "docs/your-service.md", "bulkheadlab list"} {
		if !strings.Contains(text, want) {
			t.Errorf("--help does not say %q:\n%s", want, text)
		}
	}
	for _, w := range internalWords {
		if strings.Contains(strings.ToLower(text), w) {
			t.Errorf("--help speaks of %q, which a user cannot know:\n%s", w, text)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "docs", "your-service.md")); err != nil {
		t.Errorf("--help names docs/your-service.md: %v", err)
	}
}
