package rundata

import "testing"

// TestUnitOfName: a histogram's name says its unit by its last word; a
// word that only ends like one says none.
func TestUnitOfName(t *testing.T) {
	for name, want := range map[string]string{
		"pg_pool_acquire_seconds": UnitSeconds, "db_wait_milliseconds": UnitMilliseconds, "query_ms": UnitMilliseconds,
		"gc_microseconds": UnitMicroseconds, "x_us": UnitMicroseconds, "x_nanoseconds": UnitNanoseconds, "x_ns": UnitNanoseconds,
		"db_time": "", "items": "", "_seconds": "", "xms": "", "bus": "",
	} {
		if got := UnitOfName(name); got != want {
			t.Errorf("UnitOfName(%q) = %q, want %q", name, got, want)
		}
	}
	for unit, want := range map[string]float64{UnitSeconds: 1000, UnitMilliseconds: 1, UnitMicroseconds: 1e-3, UnitNanoseconds: 1e-6, "min": 0} {
		if got := UnitMs(unit); got != want {
			t.Errorf("UnitMs(%q) = %g, want %g", unit, got, want)
		}
	}
}
