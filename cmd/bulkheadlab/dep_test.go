package main

import (
	"strings"
	"testing"
)

func TestDepBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"--latency", "-1ms"}, "--latency"},
		{[]string{"--jitter", "-1ms"}, "--jitter"},
		{[]string{"--size", "-1"}, "--size"},
		{[]string{"--seed", "-1"}, "--seed"},
		{[]string{"--capacity", "-1"}, "--capacity"},
		{[]string{"--capacity", "4", "--queue", "-1"}, "--queue"},
		{[]string{"--queue", "5"}, "--queue"},
		{[]string{"--latency", "slow"}, "--latency"},
		{[]string{"--listen", "127.0.0.1"}, "--listen"},
		{[]string{"positional"}, "positional"},
	}
	for _, tt := range tests {
		args := append([]string{"dep"}, tt.args...)
		code, msg := execute(t, args...)
		if code != ExitUsage || !strings.Contains(msg, tt.flag) {
			t.Errorf("bulkheadlab %s: exit %d %q, want exit %d naming %s", strings.Join(args, " "), code, msg, ExitUsage, tt.flag)
		}
	}
}
