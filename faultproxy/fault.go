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

// Fault is one fault specification: a type, a percent, and the type's
// parameters. Its JSON form is the control API's: the type, the percent and
// the parameters side by side, durations as Go duration strings:
//
//	{"type":"latency","percent":100,"latency":"225ms","jitter":"10ms","distribution":"uniform"}
//	{"type":"error","percent":100,"status":503,"body":"...","headers":{"K":"V"}}
//	{"type":"abort","percent":5}
//	{"type":"hang","percent":1}
//	{"type":"capacity","percent":100,"capacity":4,"queue":100,"latency":"20ms","jitter":"2ms"}
//	{"type":"payload","percent":100,"size":262144}
//
// Parameters that are not the type's are refused. In JSON an omitted
// percent means 100; in Go the zero value 0 means "never fires". A Fault is
// a value; the proxy copies it when a set is installed.
type Fault struct {
	// Type is the name of a registered fault type: TypeLatency,
	// TypeError, TypeAbort, TypeHang, TypeCapacity, TypePayload...
	Type string
	// Percent is the probability, 0–100, that the fault fires on a request.
	Percent float64
	// Params are the type's parameters: a value of the struct its file
	// defines (Delay for latency, Reply for error, Capacity, Payload...),
	// whose tagged fields are the JSON's keys. nil stands for the zero
	// value (every parameter left out), and is all a type without
	// parameters (abort, hang) takes.
	Params any
	// Match, if not empty, is a route expression (route.go): the fault
	// acts on the requests whose method and path it matches, and passes
	// the others as if it were not set. "GET ^/reports/", "^/export$".
	Match string
}

// MarshalJSON encodes f in the control API's form: type, percent (always
// written), then the parameters that are set, in the type's order.
func (f Fault) MarshalJSON() ([]byte, error) {
	keys, values := []string{"type", "percent"}, []any{f.Type, f.Percent}
	if f.Params != nil {
		v := reflect.ValueOf(f.Params)
		owner := typeOfParams(v.Type())
		if owner == nil {
			return nil, fmt.Errorf("faultproxy: parameters %T are no fault type's", f.Params)
		}
		for _, p := range owner.params {
			if p.isSet(v) {
				keys, values = append(keys, p.Name), append(values, p.jsonValue(v))
			}
		}
	}
	if f.Match != "" {
		keys, values = append(keys, "match"), append(values, f.Match)
	}
	out := []byte{'{'}
	for i, k := range keys {
		v, err := json.Marshal(values[i])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(strconv.AppendQuote(out, k), ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON decodes one fault strictly (unknown fields are errors) and
// validates it.
func (f *Fault) UnmarshalJSON(b []byte) error {
	g, err := decodeFault(b, "fault")
	if err != nil {
		return err
	}
	*f = g
	return nil
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
		f, err := decodeFault(raw, "faults["+strconv.Itoa(i)+"]")
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

// decodeFault decodes, validates and normalises one fault of the control
// API's JSON; errors name its fields under field ("faults[1]"). The
// parameters are decoded by the registration of the fault's type.
func decodeFault(b []byte, field string) (Fault, error) {
	f, foreign, err := decodeWire(b, field)
	if err != nil {
		return Fault{}, err
	}
	if err := f.check(field, foreign); err != nil {
		return Fault{}, err
	}
	return f.normalized(), nil
}

// decodeWire decodes one fault of the control API's JSON, not validated:
// an omitted percent is 100, the parameters of the fault's type are in
// Params, and foreign names the first parameter of another type that is
// set (not the zero value), if any. Errors are those of the JSON itself:
// an unknown field, a value of the wrong kind.
func decodeWire(b []byte, field string) (f Fault, foreign string, err error) {
	var w map[string]json.RawMessage
	if err := strictDecode(bytes.NewReader(b), &w, field); err != nil {
		return Fault{}, "", err
	}
	var unknown []string
	for k := range w {
		if k != "type" && k != "percent" && k != "match" && !isParam(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Fault{}, "", fieldErr(field, "unknown field %q", unknown[0])
	}
	f = Fault{Percent: 100}
	if raw, ok := w["type"]; ok {
		if err := json.Unmarshal(raw, &f.Type); err != nil {
			return Fault{}, "", jsonErr(err, field+".type")
		}
	}
	if raw, ok := w["percent"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &f.Percent); err != nil {
			return Fault{}, "", jsonErr(err, field+".percent")
		}
	}
	if raw, ok := w["match"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &f.Match); err != nil {
			return Fault{}, "", jsonErr(err, field+".match")
		}
	}
	t := lookupType(f.Type)
	var pv reflect.Value
	if t != nil && t.ptype != nil {
		pv = reflect.New(t.ptype).Elem()
	}
	for _, p := range registry.allParams {
		raw, ok := w[p.Name]
		if !ok || string(raw) == "null" {
			continue
		}
		if own, ok := t.paramOf(p.Name); ok {
			if err := own.decodeJSON(raw, pv, field+"."+p.Name); err != nil {
				return Fault{}, "", err
			}
			continue
		}
		// Another type's parameter: an error once the percent is
		// checked, unless it is the zero value.
		v := reflect.New(p.typ).Elem()
		if err := p.decodeValue(raw, v, field+"."+p.Name); err != nil {
			return Fault{}, "", err
		}
		if foreign == "" && valueSet(v) {
			foreign = p.Name
		}
	}
	if pv.IsValid() {
		f.Params = pv.Interface()
	}
	return f, foreign, nil
}

// isParam reports whether name is a parameter of any fault type.
func isParam(name string) bool {
	for _, p := range registry.allParams {
		if p.Name == name {
			return true
		}
	}
	return false
}

// paramOf is param for a type that may be nil (no such type).
func (t *registered) paramOf(name string) (Param, bool) {
	if t == nil {
		return Param{}, false
	}
	return t.param(name)
}

// NewFault returns the fault of type typ with percent and the parameters
// values, by name, in their Go types (a time.Duration, an integer, a
// string, a map[string]string); a value that is the zero of its kind is
// left out. It does not validate the fault (Validate does); its errors, a
// *FieldError, name a parameter of another type ("fault.status: only
// valid for type error") or a value of the wrong kind.
func NewFault(typ string, percent float64, values map[string]any) (Fault, error) {
	f := Fault{Type: typ, Percent: percent}
	t := lookupType(typ)
	var pv reflect.Value
	if t != nil && t.ptype != nil {
		pv = reflect.New(t.ptype).Elem()
	}
	for _, p := range registry.allParams {
		x, ok := values[p.Name]
		if !ok || x == nil || reflect.ValueOf(x).IsZero() {
			continue
		}
		own, ok := t.paramOf(p.Name)
		if !ok {
			if m := reflect.ValueOf(x); m.Kind() == reflect.Map && m.Len() == 0 {
				continue
			}
			return Fault{}, fieldErr("fault."+p.Name, "only valid for type %s", paramOwners(p.Name))
		}
		if err := own.assign(pv, x, "fault."+p.Name); err != nil {
			return Fault{}, err
		}
	}
	for name := range values {
		if !isParam(name) {
			return Fault{}, fieldErr("fault."+name, "not a parameter of any fault type")
		}
	}
	if pv.IsValid() {
		f.Params = pv.Interface()
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

func (f Fault) validate(field string) error { return f.check(field, "") }

// check validates f; foreign, if not empty, is a parameter of another
// type that the fault's JSON set. Errors name fields under field.
func (f Fault) check(field, foreign string) error {
	if math.IsNaN(f.Percent) || f.Percent < 0 || f.Percent > 100 {
		return fieldErr(field+".percent", "must be within 0–100, got %v", f.Percent)
	}
	t := lookupType(f.Type)
	if foreign == "" && f.Params != nil && (t == nil || t.ptype != reflect.TypeOf(f.Params)) {
		// Parameters of another type's struct: each one set is foreign
		// unless the fault's type takes one of its name.
		owner := typeOfParams(reflect.TypeOf(f.Params))
		if owner == nil {
			return fieldErr(field+".type", "parameters %T are no fault type's", f.Params)
		}
		v := reflect.ValueOf(f.Params)
		for _, p := range owner.params {
			if _, ok := t.paramOf(p.Name); p.isSet(v) && !ok {
				foreign = p.Name
				break
			}
		}
		if foreign == "" && t != nil {
			return fieldErr(field+".type", "parameters %T are not a %s fault's", f.Params, f.Type)
		}
	}
	if foreign != "" {
		return fieldErr(field+"."+foreign, "only valid for type %s", paramOwners(foreign))
	}
	switch {
	case t == nil && f.Type == "":
		return fieldErr(field+".type", "required (%s)", orList(Types()))
	case t == nil:
		return fieldErr(field+".type", "unknown fault type %q (want %s)", f.Type, orList(Types()))
	}
	if f.Match != "" {
		if err := ValidateRoute(f.Match); err != nil {
			return fieldErr(field+".match", "%v", err)
		}
	}
	g := f
	g.Params, _ = t.paramsOf(&f)
	return t.validate(&g, field)
}

// typeOfParams returns the fault type whose parameter struct is pt, nil
// if there is none.
func typeOfParams(pt reflect.Type) *registered {
	for _, t := range registry.list {
		if t.ptype == pt {
			return t
		}
	}
	return nil
}

// normalized fills in the type's defaults (distribution, status, max...).
func (f Fault) normalized() Fault {
	if t := lookupType(f.Type); t != nil {
		if p, ok := t.paramsOf(&f); ok {
			f.Params = p
			return t.normalized(f)
		}
	}
	return f
}

// validateSet applies the rules over a whole set (setValidator).
func validateSet(fs []Fault) error {
	for _, t := range registry.list {
		if v, ok := t.faultType.(setValidator); ok {
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
