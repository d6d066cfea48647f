package faultproxy

import (
	"testing"
	"time"
)

func TestSleepUntil(t *testing.T) {
	start := time.Now()
	if !SleepUntil(nil, nil, start.Add(20*time.Millisecond)) {
		t.Fatal("SleepUntil with nothing closed reported false")
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("SleepUntil returned after %v, before its deadline (20ms)", took)
	}
	cancel := make(chan struct{})
	close(cancel)
	start = time.Now()
	if SleepUntil(cancel, nil, start.Add(time.Hour)) || time.Since(start) > time.Second {
		t.Error("SleepUntil with cancel closed did not report false at once")
	}
	if !SleepUntil(nil, nil, start.Add(-time.Second)) {
		t.Error("SleepUntil of a past deadline reported false")
	}
}
