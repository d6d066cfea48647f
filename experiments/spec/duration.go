package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a spec duration. It is written either as a Go duration
// ("250ms", "1.5s") or relative to the service timeout T ("0.9T", "40T").
// A relative Duration has Rel > 0 and is turned into an absolute one by
// Resolve; after Spec.Resolve every Duration of a spec is absolute.
// The zero value means "not set". Duration is a value type, safe to copy.
type Duration struct {
	D   time.Duration // absolute value, valid when Rel == 0
	Rel float64       // factor of T, when > 0
}

// Abs returns an absolute Duration of d.
func Abs(d time.Duration) Duration { return Duration{D: d} }

// RelT returns a Duration of f·T.
func RelT(f float64) Duration { return Duration{Rel: f} }

// ErrBadDuration is wrapped by ParseDuration errors.
var ErrBadDuration = errors.New("invalid duration")

// ParseDuration parses "250ms", "1.5s" or "0.9T". Negative values, NaN and
// values over 24 hours are refused; "0" is allowed.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, ok := strings.CutSuffix(s, "T"); ok {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 1e6 {
			return Duration{}, fmt.Errorf("%w %q: want a positive factor of the timeout, e.g. 0.9T", ErrBadDuration, s)
		}
		return Duration{Rel: v}, nil
	}
	if s == "0" {
		return Duration{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("%w %q: want e.g. 250ms, 1.5s or 0.9T", ErrBadDuration, s)
	}
	if d < 0 || d > 24*time.Hour {
		return Duration{}, fmt.Errorf("%w %q: must be between 0 and 24h", ErrBadDuration, s)
	}
	return Duration{D: d}, nil
}

// IsZero reports whether d is unset.
func (d Duration) IsZero() bool { return d.D == 0 && d.Rel == 0 }

// Resolve returns the absolute duration of d given the timeout t.
func (d Duration) Resolve(t time.Duration) time.Duration {
	if d.Rel > 0 {
		return time.Duration(math.Round(d.Rel * float64(t)))
	}
	return d.D
}

// String returns the spec form: "250ms" or "0.9T".
func (d Duration) String() string {
	if d.Rel > 0 {
		return strconv.FormatFloat(d.Rel, 'g', -1, 64) + "T"
	}
	return d.D.String()
}

// setScalar implements scalarSetter for the spec decoder.
func (d *Duration) setScalar(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes d in its spec form.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
