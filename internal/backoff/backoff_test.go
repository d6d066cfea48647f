package backoff

import (
	"testing"
	"time"
)

func TestSeededAndBounded(t *testing.T) {
	a := New(10*time.Millisecond, 40*time.Millisecond, 0.5, 9)
	b := New(10*time.Millisecond, 40*time.Millisecond, 0.5, 9)
	for n := 1; n <= 5; n++ {
		da, db := a(n), b(n)
		base := min(10*time.Millisecond<<(n-1), 40*time.Millisecond)
		if da != db || da < base/2 || da > base*3/2 {
			t.Errorf("retry %d: delays %v and %v, want equal and within ±50%% of %v", n, da, db, base)
		}
	}
	if d := New(0, 0, 0.5, 1)(3); d != 0 {
		t.Errorf("zero backoff gave %v", d)
	}
	if d := New(5*time.Millisecond, 0, 0, 1)(4); d != 5*time.Millisecond {
		t.Errorf("no max: retry 4 waited %v, want the base 5ms", d)
	}
}
