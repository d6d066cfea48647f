package faultproxy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// A Param is one parameter of a fault type: a field of the type's
// parameter struct (Delay, Reply, Capacity, Payload...), tagged
// `fault:"name"`. Its name is the key of the control API's JSON and of a
// spec's fault; its kind says how both write a value.
type Param struct {
	// Name is the JSON (and spec) key, e.g. "latency".
	Name string
	// Kind is how a value is written.
	Kind ParamKind
	// Default, when not nil, is the value that stands for the parameter
	// when it is left out (the proxy's for its zero value), in the
	// field's Go type: a spec fills it in, and refuses the zero value
	// written out. Tagged `default:"..."`.
	Default any
	// Want, if not empty, says what a value must be, for messages: "an
	// HTTP status 200–599". Tagged `want:"..."`.
	Want string

	index int          // of the field in the parameter struct
	typ   reflect.Type // of the field
}

// ParamKind is how a parameter's value is written.
type ParamKind uint8

// Kinds of parameters, by the Go type of their field.
const (
	// KindDuration: a time.Duration; in JSON a Go duration string
	// ("225ms"), in a spec also a factor of the service's timeout ("0.9T").
	KindDuration ParamKind = iota + 1
	// KindInt: an int or int64; in JSON and a spec an integer.
	KindInt
	// KindBytes: an int or int64 counting bytes (tag option "bytes"); in
	// JSON an integer, in a spec also with a unit ("256KiB").
	KindBytes
	// KindString: a string.
	KindString
	// KindHeaders: a map[string]string; in JSON and a spec a mapping.
	KindHeaders
)

// String names the kind as messages do.
func (k ParamKind) String() string {
	switch k {
	case KindDuration:
		return "duration"
	case KindInt:
		return "integer"
	case KindBytes:
		return "size in bytes"
	case KindString:
		return "string"
	case KindHeaders:
		return "mapping of strings"
	}
	return "kind " + strconv.Itoa(int(k))
}

var durationType = reflect.TypeFor[time.Duration]()

// paramsOfStruct lists the parameters of parameter struct t, in field
// order. It panics on a field it cannot serve: a fault type's parameter
// struct is checked when the package loads.
func paramsOfStruct(t reflect.Type) []Param {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("faultproxy: parameters %s are not a struct", t))
	}
	out := make([]Param, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opt, _ := strings.Cut(sf.Tag.Get("fault"), ",")
		if !sf.IsExported() || name == "" {
			panic(fmt.Sprintf("faultproxy: %s.%s: every field of a parameter struct is exported and tagged `fault:\"name\"`", t, sf.Name))
		}
		p := Param{Name: name, Want: sf.Tag.Get("want"), index: i, typ: sf.Type}
		switch k := sf.Type.Kind(); {
		case sf.Type == durationType:
			p.Kind = KindDuration
		case (k == reflect.Int || k == reflect.Int64) && opt == "bytes":
			p.Kind = KindBytes
		case k == reflect.Int || k == reflect.Int64:
			p.Kind = KindInt
		case k == reflect.String:
			p.Kind = KindString
		case k == reflect.Map && sf.Type.Key().Kind() == reflect.String && sf.Type.Elem().Kind() == reflect.String:
			p.Kind = KindHeaders
		default:
			panic(fmt.Sprintf("faultproxy: %s.%s: a parameter is a time.Duration, an int, an int64, a string or a map[string]string, not %s", t, sf.Name, sf.Type))
		}
		if def, ok := sf.Tag.Lookup("default"); ok {
			v, err := p.parseDefault(def)
			if err != nil {
				panic(fmt.Sprintf("faultproxy: %s.%s: default %q: %v", t, sf.Name, def, err))
			}
			p.Default = v
		}
		out = append(out, p)
	}
	return out
}

// parseDefault reads a default tag as a value of the field's type.
func (p Param) parseDefault(s string) (any, error) {
	v := reflect.New(p.typ).Elem()
	switch p.Kind {
	case KindDuration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, err
		}
		v.SetInt(int64(d))
	case KindInt, KindBytes:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		v.SetInt(n)
	case KindString:
		v.SetString(s)
	default:
		return nil, fmt.Errorf("a %s has no default", p.Kind)
	}
	return v.Interface(), nil
}

// isSet reports whether the parameter has a value in the parameter struct
// v: not its zero value (an empty map is unset).
func (p Param) isSet(v reflect.Value) bool { return valueSet(v.Field(p.index)) }

// valueSet reports whether a parameter's value f is not its zero value (an
// empty map is unset).
func valueSet(f reflect.Value) bool {
	if f.Kind() == reflect.Map {
		return f.Len() != 0
	}
	return !f.IsZero()
}

// jsonValue is the parameter's value in v as the control API's JSON
// writes it.
func (p Param) jsonValue(v reflect.Value) any {
	f := v.Field(p.index)
	if p.Kind == KindDuration {
		return time.Duration(f.Int()).String()
	}
	return f.Interface()
}

// decodeJSON sets the parameter in v (addressable) from its JSON value
// raw; errors name field.
func (p Param) decodeJSON(raw json.RawMessage, v reflect.Value, field string) error {
	return p.decodeValue(raw, v.Field(p.index), field)
}

// decodeValue sets f, a value of the parameter's Go type (addressable),
// from its JSON value raw; errors name field.
func (p Param) decodeValue(raw json.RawMessage, f reflect.Value, field string) error {
	if p.Kind != KindDuration {
		if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
			return jsonErr(err, field)
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return jsonErr(err, field)
	}
	d, err := parseDur(field, s)
	if err != nil {
		return err
	}
	f.SetInt(int64(d))
	return nil
}

// assign sets the parameter in v (addressable) to x, a value of its kind
// in Go: a time.Duration, an integer type, a string or a
// map[string]string.
func (p Param) assign(v reflect.Value, x any, field string) error {
	f := v.Field(p.index)
	xv := reflect.ValueOf(x)
	switch {
	case p.Kind == KindDuration && xv.Type() == durationType:
		f.SetInt(xv.Int())
	case (p.Kind == KindInt || p.Kind == KindBytes) && xv.CanInt() && xv.Type() != durationType:
		if f.OverflowInt(xv.Int()) {
			return fieldErr(field, "%d is out of range", xv.Int())
		}
		f.SetInt(xv.Int())
	case p.Kind == KindString && xv.Kind() == reflect.String:
		f.SetString(xv.String())
	case p.Kind == KindHeaders && xv.Type() == f.Type():
		f.Set(xv)
	default:
		return fieldErr(field, "want a %s, got %T", p.Kind, x)
	}
	return nil
}

// Value returns the parameter's value in params, a parameter struct of its
// type, in the field's Go type; nil when params is no such struct.
func (p Param) Value(params any) any {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Struct || p.index >= v.NumField() || v.Type().Field(p.index).Type != p.typ {
		return nil
	}
	return v.Field(p.index).Interface()
}
