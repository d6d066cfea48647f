package pgproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Types lists every fault type of the PostgreSQL data plane (TypeLatency,
// TypeError, TypeHang): one file each, which registers it.
var Types []string

// kind is what a fault type's file declares about it.
type kind struct {
	// fields are the parameters it takes besides type, percent and match.
	fields []string
	// normalized fills in its defaults.
	normalized func(f Fault) Fault
	// validate checks its parameters (their common ranges are checked).
	validate func(f Fault, field string) error
	// act enters f, a fault of the type that fired on a query, into the
	// query's decision d, drawing from r what it needs.
	act func(f *Fault, r *qrand, d *decision)
}

// kinds are the fault types by name.
var kinds = map[string]kind{}

// register adds a fault type; each type's file calls it.
func register(name string, k kind) {
	kinds[name] = k
	Types = append(Types, name)
}

// params are the parameters of a fault besides type, percent and match, in
// the order they are checked.
var params = []string{"latency", "jitter", "code", "message"}

// Limits on parameters.
const (
	MaxFaults     = faultproxy.MaxFaults
	MaxDuration   = faultproxy.MaxDuration
	MaxMatchLen   = 4 << 10 // bytes of a match expression
	MaxMessageLen = 1 << 10 // bytes of an error fault's message
)

// Fault is one PostgreSQL fault. Its JSON form is the control API's:
//
//	{"type":"latency","percent":100,"latency":"50ms","jitter":"5ms","match":"pg_sleep|analytics"}
//	{"type":"error","percent":10,"code":"53300","message":"sorry, too many clients already"}
//	{"type":"hang","match":"^UPDATE"}
//
// Durations are Go duration strings or numbers of milliseconds. In JSON an
// omitted percent means 100; in Go the zero value 0 never fires. A Fault
// is a value; the proxy copies it.
type Fault struct {
	// Type is one of the Type constants.
	Type string
	// Percent is the probability, 0–100, that the fault applies to a
	// query it matches (rolled once per query).
	Percent float64
	// Match, if not empty, is a regular expression (RE2 syntax) that a
	// statement of the query must match (anywhere) for the fault to apply;
	// empty matches every query that has a statement.
	Match string
	// Latency and Jitter: the query's answer reaches the client no sooner
	// than Latency ± Jitter (uniform, Jitter ≤ Latency) after the proxy
	// received the query.
	Latency, Jitter time.Duration
	// Code is an error fault's SQLSTATE, five digits or capital letters;
	// empty means DefaultCode.
	Code string
	// Message is an error fault's message; empty means DefaultMessage.
	Message string
}

// ErrInvalidFault is wrapped by every validation error; it is the HTTP
// plane's, so that callers branch on one sentinel.
var ErrInvalidFault = faultproxy.ErrInvalidFault

func fieldErr(field, format string, args ...any) error {
	return &faultproxy.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// wire is the JSON form of a Fault. Durations are raw: a string or a number.
type wire struct {
	Type    string          `json:"type"`
	Percent *float64        `json:"percent,omitempty"`
	Match   string          `json:"match,omitempty"`
	Latency json.RawMessage `json:"latency,omitempty"`
	Jitter  json.RawMessage `json:"jitter,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
}

// MarshalJSON encodes f in the control API's form, durations as strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	p := f.Percent
	w := wire{Type: f.Type, Percent: &p, Match: f.Match, Code: f.Code, Message: f.Message}
	if slices.Contains(kinds[f.Type].fields, "latency") || f.Latency != 0 {
		w.Latency, _ = json.Marshal(f.Latency.String())
	}
	if f.Jitter != 0 {
		w.Jitter, _ = json.Marshal(f.Jitter.String())
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes one fault strictly (unknown fields are errors),
// normalises and validates it.
func (f *Fault) UnmarshalJSON(b []byte) error {
	g, err := decodeFault(b, "fault")
	if err != nil {
		return err
	}
	*f = g
	return nil
}

func decodeFault(b []byte, field string) (Fault, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Fault{}, fieldErr(field, "%v", err)
	}
	f := Fault{Type: w.Type, Percent: 100, Match: w.Match, Code: w.Code, Message: w.Message}
	if w.Percent != nil {
		f.Percent = *w.Percent
	}
	for _, d := range []struct {
		name string
		raw  json.RawMessage
		to   *time.Duration
	}{{"latency", w.Latency, &f.Latency}, {"jitter", w.Jitter, &f.Jitter}} {
		v, err := parseDur(d.raw)
		if err != nil {
			return Fault{}, fieldErr(field+"."+d.name, "%v", err)
		}
		*d.to = v
	}
	f = f.normalized()
	return f, f.validate(field)
}

// parseDur reads a Go duration string, or a number of milliseconds.
func parseDur(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("want a duration such as \"100ms\", got %q", s)
		}
		return d, nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("want a duration string or a number, got %s", raw)
	}
	if math.IsNaN(n) || n < 0 || n*float64(time.Millisecond) > float64(MaxDuration) {
		return 0, fmt.Errorf("want 0–%v, got %vms", MaxDuration, n)
	}
	return time.Duration(n * float64(time.Millisecond)), nil
}

// normalized fills in the defaults of f's type.
func (f Fault) normalized() Fault {
	if k, ok := kinds[f.Type]; ok && k.normalized != nil {
		return k.normalized(f)
	}
	return f
}

// validate checks f's own fields; errors name field+".name".
func (f Fault) validate(field string) error {
	if math.IsNaN(f.Percent) || f.Percent < 0 || f.Percent > 100 {
		return fieldErr(field+".percent", "want 0–100, got %v", f.Percent)
	}
	k, ok := kinds[f.Type]
	if !ok {
		return fieldErr(field+".type", "want one of %v, got %q", Types, f.Type)
	}
	if len(f.Match) > MaxMatchLen {
		return fieldErr(field+".match", "at most %d bytes, got %d", MaxMatchLen, len(f.Match))
	}
	if _, err := regexp.Compile(f.Match); err != nil {
		return fieldErr(field+".match", "%v", err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", f.Latency}, {"jitter", f.Jitter}} {
		if d.v < 0 || d.v > MaxDuration {
			return fieldErr(field+"."+d.name, "want 0–%v, got %v", MaxDuration, d.v)
		}
	}
	set := map[string]bool{"latency": f.Latency != 0, "jitter": f.Jitter != 0, "code": f.Code != "", "message": f.Message != ""}
	for _, name := range params {
		if set[name] && !slices.Contains(k.fields, name) {
			return fieldErr(field+"."+name, "not a parameter of %s", f.Type)
		}
	}
	if k.validate == nil {
		return nil
	}
	return k.validate(f, field)
}

// ValidateFaults checks a whole set; errors name faults[i].field and wrap
// ErrInvalidFault.
func ValidateFaults(fs []Fault) error {
	if len(fs) > MaxFaults {
		return fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(fs))
	}
	for i, f := range fs {
		if err := f.normalized().validate(fmt.Sprintf("faults[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// ParseFaults decodes a control body {"faults":[...]} strictly: unknown
// fields, trailing data and invalid values are errors naming the field
// and wrapping ErrInvalidFault. A missing or null "faults" is an empty set.
func ParseFaults(r io.Reader) ([]Fault, error) {
	var w struct {
		Faults []json.RawMessage `json:"faults"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fieldErr("body", "%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fieldErr("body", "trailing data after the JSON object")
	}
	if len(w.Faults) > MaxFaults {
		return nil, fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(w.Faults))
	}
	fs := make([]Fault, 0, len(w.Faults))
	for i, raw := range w.Faults {
		f, err := decodeFault(raw, fmt.Sprintf("faults[%d]", i))
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}
