package rundata

// TimingHistograms are the Prometheus histograms of a user's service that
// the spec declares as waits or work (external.timing.histograms); RunMeta
// records them, and the sampler keeps their buckets, sums and counts under
// the service's own series names.
type TimingHistograms struct {
	Histograms []TimingHistogram `json:"histograms"`
	// By, if set, is the label whose values split the histograms' series
	// into rows (a pool, a dependency); "" sums every series into one.
	By string `json:"by,omitempty"`
	// Match, if set, keeps only the series that carry all these labels.
	Match map[string]string `json:"match,omitempty"`
}

// TimingHistogram is one histogram's family name (without _bucket), its
// role (TimingWait or TimingWork) and the unit its observations are in.
type TimingHistogram struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Unit string `json:"unit"`
}

// The units of a TimingHistogram.
const (
	UnitSeconds      = "s"
	UnitMilliseconds = "ms"
	UnitMicroseconds = "us"
	UnitNanoseconds  = "ns"
)

// unitSuffixes are the name endings that say a histogram's unit, longest
// first within a unit.
var unitSuffixes = []struct{ suffix, unit string }{
	{"_seconds", UnitSeconds}, {"_milliseconds", UnitMilliseconds}, {"_ms", UnitMilliseconds},
	{"_microseconds", UnitMicroseconds}, {"_us", UnitMicroseconds}, {"_nanoseconds", UnitNanoseconds}, {"_ns", UnitNanoseconds},
}

// UnitOfName is the unit a histogram's name says it is in (its suffix:
// _seconds, _milliseconds or _ms, _microseconds or _us, _nanoseconds or
// _ns); "" when it says none.
func UnitOfName(name string) string {
	for _, s := range unitSuffixes {
		if len(name) > len(s.suffix) && name[len(name)-len(s.suffix):] == s.suffix {
			return s.unit
		}
	}
	return ""
}

// UnitMs is how many milliseconds one of unit is; 0 for an unknown unit.
func UnitMs(unit string) float64 {
	switch unit {
	case UnitSeconds:
		return 1000
	case UnitMilliseconds:
		return 1
	case UnitMicroseconds:
		return 1e-3
	case UnitNanoseconds:
		return 1e-6
	}
	return 0
}
