package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{7}, 7},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{4, 1, 3, 2}, 2}, // (2+3)/2, truncated
		{[]time.Duration{10, -30, 20, -10}, 0},
		{[]time.Duration{100, 200, 300, 1000000}, 250},
	} {
		in := slices.Clone(c.in)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median changed its argument")
		}
	}
}

// lats is n latencies: base + i·step for i in [0, n).
func lats(n int, base, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = base + time.Duration(i)*step
	}
	return out
}

// withTail is lat with its slowest tenth set to tail.
func withTail(lat []time.Duration, tail time.Duration) []time.Duration {
	out := slices.Clone(lat)
	for i := len(out) - len(out)/10; i < len(out); i++ {
		out[i] = tail
	}
	return out
}

func TestCellQuantiles(t *testing.T) {
	l := lats(100, 1, 1) // 1..100
	slices.Reverse(l)
	if got := cellQuantiles(l); got != [3]time.Duration{50, 90, 99} {
		t.Errorf("cellQuantiles(100..1) = %v, want [50 90 99]", got)
	}
	if l[0] != 100 {
		t.Errorf("cellQuantiles sorted its argument")
	}
}

// TestPerRoundCancelsDrift: every round, ours adds 100 µs and toxiproxy
// 120 µs to the same round's direct latencies, while the machine drifts by
// up to 400 µs between rounds and one direct round has a slow tail. The
// median over rounds finds the per-round truth at p50 and p99; pooled, the
// slow direct round makes both added p99s negative.
func TestPerRoundCancelsDrift(t *testing.T) {
	const us = time.Microsecond
	var d, o, x []cell
	drift := []time.Duration{0, 400 * us, 100 * us, 300 * us, 0, 200 * us}
	for r, dr := range drift {
		base := lats(1000, 100*us+dr, 100*time.Nanosecond)
		dl := base
		if r == 2 {
			dl = withTail(base, 5*time.Millisecond) // one slow direct round
		}
		d = append(d, cell{target: "direct", sent: 1000, ok: 1000, lat: dl})
		add := func(extra time.Duration) []time.Duration {
			out := make([]time.Duration, len(base))
			for i, l := range base {
				out[i] = l + extra
			}
			return out
		}
		o = append(o, cell{target: "ours", sent: 1000, ok: 1000, lat: add(100 * us)})
		x = append(x, cell{target: "toxiproxy", sent: 1000, ok: 1000, lat: add(120 * us)})
	}
	m := [3]merged{merge(d), merge(o), merge(x)}
	for qi := range passQuantiles {
		v := judgePass(m, qi)
		if v.ours != 100*us || v.toxi != 120*us || !v.met {
			t.Errorf("q%v: median added ours %v toxiproxy %v met %v; want 100µs, 120µs, met", passQuantiles[qi], v.ours, v.toxi, v.met)
		}
		if v.rounds != 6 || v.roundsNoWorse != 6 {
			t.Errorf("q%v: ours no worse in %d of %d rounds, want 6 of 6", passQuantiles[qi], v.roundsNoWorse, v.rounds)
		}
	}
	if v := judgePass(m, 2); v.pooledOurs >= 0 || v.pooledToxi >= 0 {
		t.Errorf("pooled added p99 ours %v toxiproxy %v; this case was meant to show them negative", v.pooledOurs, v.pooledToxi)
	}
	got := addedByRound(m[1], m[0], 2)
	if len(got) != 6 || got[0] != 100*us || got[2] >= 0 {
		t.Errorf("added p99 by round = %v; want 100µs except round 3 (negative)", got)
	}
}

// TestJudgeNotLenient: a proxy that is worse in most rounds fails even if
// it wins the pooled comparison and one round by far.
func TestJudgeNotLenient(t *testing.T) {
	const us = time.Microsecond
	mk := func(name string, adds []time.Duration) merged {
		var cs []cell
		for _, a := range adds {
			cs = append(cs, cell{target: name, sent: 100, ok: 100, lat: lats(100, 100*us+a, 0)})
		}
		return merge(cs)
	}
	d := mk("direct", []time.Duration{0, 0, 0, 0, 0})
	o := mk("ours", []time.Duration{110 * us, 110 * us, 110 * us, 10 * us, 10 * us})
	x := mk("toxiproxy", []time.Duration{100 * us, 100 * us, 100 * us, 100 * us, 100 * us})
	v := judgePass([3]merged{d, o, x}, 0)
	if v.met || v.ours != 110*us || v.toxi != 100*us || v.roundsNoWorse != 2 {
		t.Errorf("judgePass = %+v; want not met (110µs vs 100µs), ours no worse in 2 rounds", v)
	}
	// Ties are met (no worse).
	if v := judgePass([3]merged{d, x, x}, 2); !v.met {
		t.Errorf("a tie was judged worse: %+v", v)
	}
}

func TestPrintPassTable(t *testing.T) {
	const us = time.Microsecond
	c := func(name string, base time.Duration) cell {
		return cell{target: name, sent: 100, ok: 100, lat: lats(100, base, us)}
	}
	m := [3]merged{
		merge([]cell{c("direct", 100*us), c("direct", 110*us)}),
		merge([]cell{c("ours", 200*us), c("ours", 220*us)}),
		merge([]cell{c("toxiproxy", 250*us), c("toxiproxy", 260*us)}),
	}
	var buf bytes.Buffer
	printPassTable(&buf, 1000, options{dur: 5 * time.Second}, m, merged{})
	out := buf.String()
	if strings.Contains(out, "floor") {
		t.Errorf("a floor row without a floor:\n%s", out)
	}
	buf.Reset()
	printPassTable(&buf, 1000, options{dur: 5 * time.Second}, m, merge([]cell{c("floor", 180*us), c("floor", 185*us)}))
	if want := "| floor (bare TCP relay, not judged) | +78 | +78 | +78 | 280 | +80, +75 |"; !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
	out = buf.String()
	for _, want := range []string{
		"### 1000/s (2 rounds × 5s per target)",
		"| ours | +105 | +105 | +105 | 308 | +100, +110 | +100, +110 | 298, 318 |",
		"| toxiproxy | +150 | +150 | +150 | 353 |",
		"| ours / toxiproxy | 0.70× | 0.70× | 0.70× | 0.87× |",
		"| rounds with ours' added ≤ toxiproxy's | 2 of 2 | | 2 of 2 |",
		"Pooled (not judged)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
