package fields

import (
	"slices"
	"testing"
	"time"
)

type inner struct {
	N  int
	On []string
}

type from struct {
	Name  string
	D     time.Duration
	Rate  float64
	In    *inner
	Extra bool
}

type to struct {
	Name string
	D    time.Duration
	Rate float64
	In   *inner
}

// TestFillAndCarried: every field filled non-zero; a conversion that drops
// a field, or whose target lacks one, is named.
func TestFillAndCarried(t *testing.T) {
	var f from
	Fill(&f, nil)
	if f.Name == "" || f.D == 0 || f.Rate == 0 || f.In == nil || f.In.N == 0 || len(f.In.On) != 1 || !f.Extra {
		t.Fatalf("not every field filled: %+v", f)
	}
	good := to{Name: f.Name, D: f.D, Rate: f.Rate, In: &inner{N: f.In.N, On: f.In.On}}
	if got := Carried(f, good, nil, "Extra"); len(got) != 0 {
		t.Errorf("a faithful conversion: %v", got)
	}
	if got := Carried(f, good, nil); !slices.Equal(got, []string{"from.Extra (no such field on the other side)"}) {
		t.Errorf("a field the target lacks: %v", got)
	}
	lossy := good
	lossy.In = &inner{On: f.In.On}
	if got := Carried(f, lossy, nil, "Extra"); len(got) != 1 || got[0][:10] != "from.In.N " {
		t.Errorf("a field not carried: %v", got)
	}
	if got := Missing(f, good); !slices.Equal(got, []string{"Extra"}) {
		t.Errorf("Missing = %v", got)
	}
}
