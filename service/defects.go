package service

import (
	"errors"
	"fmt"
	"strings"
)

// Defect names a deliberate TEST DEFECT of the built-in service, never for
// real use: a bug of the kind a real service has, switched on so that a
// detector of the harness can be shown to fail against it (Config.Defects).
type Defect string

// The test defects.
//
// The three leaks act on the pool permit an endpoint holds for its
// dependency call, in the plain endpoint handler and in a policy stack's
// bulkhead stage over the layout's pool (not on failsafe-go's bulkhead,
// which is not a Pool, nor on a stack's nested limit). Which path a call
// took is the dependency call's outcome, decided when the call returns:
// the call's context (the request's, bounded by T) is asked first, and if
// it has ended, what ended it first names the path, even though the call
// then also failed: the client going away is the cancel path, T expiring
// the timeout path. Only a failure with the context still live is the
// error path. The success path always releases.
const (
	// DefectLeakOnError: the permit is not released when the dependency
	// call ended in an error (the 502 path: an error status, a refused or
	// reset connection, a bad or oversized body).
	DefectLeakOnError Defect = "leak-on-error"
	// DefectLeakOnTimeout: the permit is not released when the call ran out
	// of its time T (the 504 path).
	DefectLeakOnTimeout Defect = "leak-on-timeout"
	// DefectLeakOnCancel: the permit is not released when the endpoint's
	// client went away during the call (its request's context ended before
	// the call finished).
	DefectLeakOnCancel Defect = "leak-on-cancel"
	// DefectRacyCounter: every pool of the service acquires by
	// check-then-increment (it reads the count in use, compares it with the
	// size, yields, then increments) instead of one compare-and-swap, so
	// that callers arriving together exceed the limit. Release is
	// unchanged; the count returns to zero as the permits are released.
	DefectRacyCounter Defect = "racy-counter"
)

// AllDefects lists every Defect, in the order of the constants.
var AllDefects = []Defect{DefectLeakOnError, DefectLeakOnTimeout, DefectLeakOnCancel, DefectRacyCounter}

// ErrUnknownDefect is wrapped by ParseDefect's error.
var ErrUnknownDefect = errors.New("unknown test defect")

// ParseDefect returns the Defect named s, or an error wrapping
// ErrUnknownDefect that lists the known names.
func ParseDefect(s string) (Defect, error) {
	for _, d := range AllDefects {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownDefect, s, defectList())
}

func defectList() string { return defectNames(AllDefects) }

// defectNames joins ds with ", ".
func defectNames(ds []Defect) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// validateDefects reports an unknown or repeated defect as a *ConfigError
// on "defects".
func validateDefects(ds []Defect) error {
	seen := map[Defect]bool{}
	for _, d := range ds {
		if _, err := ParseDefect(string(d)); err != nil {
			return fieldErrorf("defects", "%v", err)
		}
		if seen[d] {
			return fieldErrorf("defects", "%s is given twice", d)
		}
		seen[d] = true
	}
	return nil
}

// defectSet is the switched-on defects, read on every request.
type defectSet struct {
	leakOnError, leakOnTimeout, leakOnCancel, racyCounter bool
}

func newDefectSet(ds []Defect) defectSet {
	var s defectSet
	for _, d := range ds {
		switch d {
		case DefectLeakOnError:
			s.leakOnError = true
		case DefectLeakOnTimeout:
			s.leakOnTimeout = true
		case DefectLeakOnCancel:
			s.leakOnCancel = true
		case DefectRacyCounter:
			s.racyCounter = true
		}
	}
	return s
}

// leaks reports whether a call of outcome (dependency.call's) keeps its
// permit: never for outcomeOK.
func (s defectSet) leaks(outcome string) bool {
	switch outcome {
	case outcomeError:
		return s.leakOnError
	case outcomeTimeout:
		return s.leakOnTimeout
	case outcomeCancelled:
		return s.leakOnCancel
	}
	return false
}

// leaksOn reports whether a stack call that returned err keeps its permit:
// only when err is the dependency call's own failure (not a refusal of a
// policy inside the bulkhead) of a leaking outcome.
func (s defectSet) leaksOn(err error) bool {
	if err == nil || !(s.leakOnError || s.leakOnTimeout || s.leakOnCancel) {
		return false
	}
	var df *depFailure
	return errors.As(err, &df) && s.leaks(df.res.outcome)
}
