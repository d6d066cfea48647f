package service

import (
	"context"
	"testing"
	"time"
)

// TestPoolExhaustedSince: the mark is set when the last free permit is
// taken, kept while waiters are handed permits, and cleared when a permit
// is free again.
func TestPoolExhaustedSince(t *testing.T) {
	p, err := NewPool("x", PoolConfig{Size: 2, Queue: 1, MaxWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	if s := p.Snapshot(); !s.ExhaustedSince.IsZero() {
		t.Fatalf("1 of 2 permits in use: exhausted since %v, want zero", s.ExhaustedSince)
	}
	before := time.Now()
	b, _ := p.Acquire(ctx)
	since := p.Snapshot().ExhaustedSince
	if since.Before(before) || since.After(time.Now()) {
		t.Fatalf("pool full: exhausted since %v, want between %v and now", since, before)
	}
	got := make(chan Permit)
	go func() { c, _ := p.Acquire(ctx); got <- c }()
	for deadline := time.Now().Add(5 * time.Second); p.Snapshot().Waiting == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the third caller never queued")
		}
	}
	a.Release() // hand-off to the waiter: still no free permit
	c := <-got
	if s := p.Snapshot(); !s.ExhaustedSince.Equal(since) {
		t.Errorf("after a hand-off: exhausted since %v, want unchanged %v", s.ExhaustedSince, since)
	}
	b.Release()
	if s := p.Snapshot(); !s.ExhaustedSince.IsZero() {
		t.Errorf("a permit free again: exhausted since %v, want zero", s.ExhaustedSince)
	}
	c.Release()
}
