package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits on fault parameters, so that sums and conversions never overflow and
// a control body stays small.
const (
	MaxFaults    = 64        // faults in one set
	MaxDuration  = time.Hour // any latency, jitter or max
	MaxBodyBytes = 64 << 10  // an error fault's body
	MaxHeaders   = 32        // an error fault's headers
)

// ErrInvalidFault is wrapped by every validation error of a fault set.
var ErrInvalidFault = errors.New("invalid fault")

// FieldError is a validation error naming the offending field, for example
// "faults[0].percent". It wraps [ErrInvalidFault].
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidFault) true.
func (e *FieldError) Unwrap() error { return ErrInvalidFault }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Fault is one fault specification. Its JSON form is the control API's, with
// durations as Go duration strings:
//
//	{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}
//	{"type":"error","percent":100,"status":503,"body":"...","headers":{"K":"V"}}
//	{"type":"abort","percent":5}
//	{"type":"hang","percent":1}
//	{"type":"capacity","percent":100,"capacity":4,"queue":100,"latency":"20ms","jitter":"2ms"}
//	{"type":"payload","percent":100,"size":262144}
//
// Fields that do not belong to Type must be zero. In JSON an omitted percent
// means 100; in Go the zero value 0 means "never fires". A Fault is a value;
// the proxy copies it when a set is installed.
type Fault struct {
	// Type is one of TypeLatency, TypeError, TypeAbort, TypeHang,
	// TypeCapacity, TypePayload.
	Type string
	// Percent is the probability, 0–100, that the fault fires on a request.
	Percent float64

	// Latency is the base delay of a latency fault, or the service time
	// of a capacity fault (optional: zero adds none).
	Latency time.Duration
	// Jitter is the spread of a latency (or capacity) fault's delay: ±
	// Jitter for "uniform" (so Jitter ≤ Latency), the tail scale for
	// "pareto" and "lognormal".
	Jitter time.Duration
	// Distribution is "uniform" (default), "pareto" or "lognormal".
	Distribution string
	// Max caps a heavy-tailed delay; zero means Latency + 100·Jitter.
	Max time.Duration

	// Status is an error fault's HTTP status, 200–599; zero means 503.
	Status int
	// Body is an error fault's response body.
	Body string
	// Headers are added to an error fault's response.
	Headers map[string]string

	// Capacity is how many affected requests a capacity fault lets be
	// served at once, at least 1.
	Capacity int
	// Queue is how many affected requests may wait for a slot of a
	// capacity fault; zero means MaxQueue (normalised to it).
	Queue int

	// Size is a payload fault's document length in bytes
	// (MinPayloadBytes–MaxPayloadBytes; payload.go).
	Size int
}

// faultWire is the JSON form of a Fault.
type faultWire struct {
	Type         string            `json:"type"`
	Percent      *float64          `json:"percent,omitempty"`
	Latency      string            `json:"latency,omitempty"`
	Jitter       string            `json:"jitter,omitempty"`
	Distribution string            `json:"distribution,omitempty"`
	Max          string            `json:"max,omitempty"`
	Status       int               `json:"status,omitempty"`
	Body         string            `json:"body,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Capacity     int               `json:"capacity,omitempty"`
	Queue        int               `json:"queue,omitempty"`
	Size         int               `json:"size,omitempty"`
}

// MarshalJSON encodes f in the control API's form. Percent is always written.
func (f Fault) MarshalJSON() ([]byte, error) {
	p := f.Percent
	w := faultWire{Type: f.Type, Percent: &p, Distribution: f.Distribution,
		Status: f.Status, Body: f.Body, Headers: f.Headers, Capacity: f.Capacity, Queue: f.Queue, Size: f.Size}
	w.Latency = durString(f.Latency)
	w.Jitter = durString(f.Jitter)
	w.Max = durString(f.Max)
	return json.Marshal(w)
}

// UnmarshalJSON decodes one fault strictly (unknown fields are errors) and
// validates it.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var w faultWire
	if err := strictDecode(bytes.NewReader(b), &w, "fault"); err != nil {
		return err
	}
	g, err := w.toFault("fault")
	if err != nil {
		return err
	}
	*f = g
	return nil
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// ParseFaults decodes a control body {"faults":[...]} strictly: unknown
// fields, trailing data and invalid values are errors naming the field, and
// wrap [ErrInvalidFault]. The returned faults are normalised (defaults
// filled in) and valid. A missing or null "faults" is an empty set.
func ParseFaults(r io.Reader) ([]Fault, error) {
	// Each fault is decoded on its own, so that every error inside the list
	// names the fault's index: faults[1].percent, not faults.percent.
	var w struct {
		Faults []json.RawMessage `json:"faults"`
	}
	if err := strictDecode(r, &w, ""); err != nil {
		return nil, err
	}
	if len(w.Faults) > MaxFaults {
		return nil, fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(w.Faults))
	}
	out := make([]Fault, 0, len(w.Faults))
	for i, raw := range w.Faults {
		field := "faults[" + strconv.Itoa(i) + "]"
		var fw faultWire
		if err := strictDecode(bytes.NewReader(raw), &fw, field); err != nil {
			return nil, err
		}
		f, err := fw.toFault(field)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if err := validateSet(out); err != nil {
		return nil, err
	}
	return out, nil
}

// strictDecode decodes exactly one JSON value from r into v, rejecting
// unknown fields and trailing data. Errors wrap ErrInvalidFault and name
// fields under prefix (the path of v in the body; "" for the body itself).
func strictDecode(r io.Reader, v any, prefix string) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonErr(err, prefix)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fieldErr(orBody(prefix), "unexpected data after the JSON object")
	}
	return nil
}

func orBody(prefix string) string {
	if prefix == "" {
		return "body"
	}
	return prefix
}

// jsonErr turns a decoding error into a FieldError naming the field, under
// prefix.
func jsonErr(err error, prefix string) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		switch {
		case field == "":
			field = orBody(prefix)
		case prefix != "":
			field = prefix + "." + field
		}
		return fieldErr(field, "want %s, got JSON %s", jsonKind(te.Type), te.Value)
	case errors.As(err, &se):
		return fieldErr(orBody(prefix), "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fieldErr(orBody(prefix), "empty or truncated JSON")
	default:
		// Unknown fields: `json: unknown field "x"`.
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fieldErr(orBody(prefix), "unknown field %s", name)
		}
		return fieldErr(orBody(prefix), "%s", err.Error())
	}
}

// jsonKind names the JSON form of a Go type in an error message.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}

// toFault converts and validates one wire fault; field prefixes messages.
func (w faultWire) toFault(field string) (Fault, error) {
	f, err := w.fault(field)
	if err != nil {
		return Fault{}, err
	}
	if err := f.validate(field); err != nil {
		return Fault{}, err
	}
	return f.normalized(), nil
}

// fault converts one wire fault, not validated: an omitted percent is 100
// and durations are parsed.
func (w faultWire) fault(field string) (Fault, error) {
	f := Fault{Type: w.Type, Percent: 100, Distribution: w.Distribution,
		Status: w.Status, Body: w.Body, Headers: w.Headers, Capacity: w.Capacity, Queue: w.Queue, Size: w.Size}
	if w.Percent != nil {
		f.Percent = *w.Percent
	}
	var err error
	if f.Latency, err = parseDur(field+".latency", w.Latency); err != nil {
		return Fault{}, err
	}
	if f.Jitter, err = parseDur(field+".jitter", w.Jitter); err != nil {
		return Fault{}, err
	}
	if f.Max, err = parseDur(field+".max", w.Max); err != nil {
		return Fault{}, err
	}
	return f, nil
}

func parseDur(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fieldErr(field, "not a Go duration (like \"225ms\"): %q", s)
	}
	return d, nil
}

// Validate reports whether f is a valid fault, with an error naming the
// field (wrapping [ErrInvalidFault]) if not.
func (f Fault) Validate() error { return f.validate("fault") }

func (f Fault) validate(field string) error {
	if math.IsNaN(f.Percent) || f.Percent < 0 || f.Percent > 100 {
		return fieldErr(field+".percent", "must be within 0–100, got %v", f.Percent)
	}
	t := lookupType(f.Type)
	for _, p := range faultParams {
		if p.set(&f) && (t == nil || !slices.Contains(t.params(), p.name)) {
			return fieldErr(field+"."+p.name, "only valid for type %s", paramOwners(p.name))
		}
	}
	switch {
	case t != nil:
		return t.validate(&f, field)
	case f.Type == "":
		return fieldErr(field+".type", "required (%s)", orList(typeNames()))
	}
	return fieldErr(field+".type", "unknown fault type %q (want %s)", f.Type, orList(typeNames()))
}

// normalized fills in the type's defaults (distribution, status, max...).
func (f Fault) normalized() Fault {
	if t := lookupType(f.Type); t != nil {
		return t.normalized(f)
	}
	return f
}

// validateSet applies the rules over a whole set (setValidator).
func validateSet(fs []Fault) error {
	for _, t := range faultTypes {
		if v, ok := t.(setValidator); ok {
			if err := v.validateSet(fs); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateFaults validates a whole set, naming fields as "faults[i]...".
func ValidateFaults(fs []Fault) error {
	if len(fs) > MaxFaults {
		return fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(fs))
	}
	for i, f := range fs {
		if err := f.validate(fmt.Sprintf("faults[%d]", i)); err != nil {
			return err
		}
	}
	return validateSet(fs)
}
