package sysmon

import (
	"slices"
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
