package sysmon

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestAwake(t *testing.T) {
	tests := []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"gctrace=1", false},
		{"schedtrace=1000", true},
		{"gctrace=1,schedtrace=2147483647", true},
		{"gctrace=1, schedtrace=5", true},
		{"scheddetail=1", false},
		{"schedtrace", false}, // no value: the runtime ignores it
		{"xschedtrace=1", false},
	}
	for _, tt := range tests {
		if got := Awake(tt.godebug); got != tt.want {
			t.Errorf("Awake(%q) = %v, want %v", tt.godebug, got, tt.want)
		}
	}
}

func TestEnv(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{nil, []string{"GODEBUG=" + Setting}},
		{[]string{"A=1", "B=2"}, []string{"A=1", "B=2", "GODEBUG=" + Setting}},
		{[]string{"GODEBUG=gctrace=1", "A=1"}, []string{"A=1", "GODEBUG=gctrace=1," + Setting}},
		{[]string{"GODEBUG="}, []string{"GODEBUG=" + Setting}},
		// The user's own trace period wins.
		{[]string{"GODEBUG=schedtrace=1000"}, []string{"GODEBUG=schedtrace=1000"}},
		// The last GODEBUG counts, as for os.Getenv; one is left.
		{[]string{"GODEBUG=schedtrace=1", "GODEBUG=gctrace=1"}, []string{"GODEBUG=gctrace=1," + Setting}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := Env(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Env(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Env modified its argument: %q, was %q", tt.in, in)
		}
	}
}

// FuzzEnv: for any environment, Env keeps every other entry in order,
// leaves exactly one GODEBUG, which sets schedtrace, and changes nothing
// when GODEBUG already did.
func FuzzEnv(f *testing.F) {
	f.Add("A=1\x00GODEBUG=gctrace=1\x00B=2")
	f.Add("GODEBUG=schedtrace=5,gctrace=1")
	f.Add("GODEBUG=\x00GODEBUG=x=1,,schedtrace")
	f.Add("")
	f.Fuzz(func(t *testing.T, joined string) {
		var env []string
		if joined != "" {
			env = strings.Split(joined, "\x00")
		}
		got := Env(env)
		var others, gotOthers []string
		last := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				last = v
			} else {
				others = append(others, kv)
			}
		}
		godebugs := 0
		for _, kv := range got {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				godebugs++
				if !Awake(v) {
					t.Errorf("Env(%q): GODEBUG=%q does not set schedtrace", env, v)
				}
				if Awake(last) && v != last {
					t.Errorf("Env(%q): GODEBUG=%q, want the user's %q", env, v, last)
				}
			} else {
				gotOthers = append(gotOthers, kv)
			}
		}
		if godebugs != 1 || !slices.Equal(others, gotOthers) {
			t.Errorf("Env(%q) = %q: want the other entries in order and one GODEBUG", env, got)
		}
	})
}

// TestReexecRefusesOtherThreads: from a thread other than the first,
// Reexec does not execute (which would replace this test binary) but
// refuses.
func TestReexecRefusesOtherThreads(t *testing.T) {
	const marker = "SYSMON_TEST_REEXECUTED"
	if os.Getenv(marker) != "" {
		t.Fatal("Reexec executed this test binary again from a thread other than the first")
	}
	t.Setenv(marker, "1") // inherited by an image that Reexec would start
	t.Setenv("GODEBUG", "")
	done, release := make(chan error, 1), make(chan struct{})
	defer close(release)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if !onMainThread() {
			done <- Reexec()
			return
		}
		// This goroutine holds the main thread: another locked one cannot.
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			done <- Reexec()
		}()
		<-release
	}()
	if err := <-done; !errors.Is(err, ErrNotMainThread) {
		t.Errorf("Reexec from another thread = %v, want ErrNotMainThread", err)
	}
}
