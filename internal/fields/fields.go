// Package fields fills and compares structs by reflection, for the tests
// that hold two shapes of one configuration together (a spec's, a
// component's, a wire form): a field added to one shape and not carried by
// the conversion to the other makes them fail.
package fields

import (
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Fill sets every field reachable from v, a pointer to a struct, to a
// distinct non-zero value: numbers count up, strings name their field's
// path, pointers are allocated, slices get one element and maps one entry.
// set, when not nil, is asked first for every value; it returns true for
// one it filled itself (a type with rules of its own, such as a duration
// that must be absolute).
func Fill(v any, set func(path string, v reflect.Value) bool) {
	n := 0
	fill(reflect.ValueOf(v).Elem(), reflect.TypeOf(v).Elem().Name(), &n, set)
}

func fill(v reflect.Value, path string, n *int, set func(string, reflect.Value) bool) {
	*n++
	if set != nil && set(path, v) {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), path+"."+v.Type().Field(i).Name, n, set)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path, n, set)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), path+"[0]", n, set)
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, path+".key", n, set)
		fill(e, path+".value", n, set)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Millisecond))
		} else {
			v.SetInt(int64(*n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		panic(fmt.Sprintf("fields: cannot fill %s (%s)", path, v.Type()))
	}
}

// Names lists the exported fields of the struct v (or the struct v points
// to), in order.
func Names(v any) []string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			out = append(out, t.Field(i).Name)
		}
	}
	return out
}

// Missing lists the exported fields of a that b lacks, by name, leaving out
// those in except.
func Missing(a, b any, except ...string) []string {
	var out []string
	have := Names(b)
	for _, n := range Names(a) {
		if !slices.Contains(have, n) && !slices.Contains(except, n) {
			out = append(out, n)
		}
	}
	return out
}

// Carried compares every field of the struct from with the field of the
// same name of the struct to, recursing into pointers to structs, and
// returns the paths whose values differ or that to lacks. norm, when not
// nil, turns a value of from into the form to holds (a spec's duration into
// a time.Duration); fields named in except are left out.
func Carried(from, to any, norm func(v reflect.Value) any, except ...string) []string {
	var out []string
	carried(reflect.ValueOf(from), reflect.ValueOf(to), reflect.TypeOf(from).Name(), norm, except, &out)
	return out
}

func carried(a, b reflect.Value, path string, norm func(reflect.Value) any, except []string, out *[]string) {
	for a.Kind() == reflect.Pointer && b.Kind() == reflect.Pointer {
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, path+" (nil on one side)")
			}
			return
		}
		a, b = a.Elem(), b.Elem()
	}
	if a.Kind() == reflect.Struct && b.Kind() == reflect.Struct && (norm == nil || norm(a) == nil) {
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if !f.IsExported() || slices.Contains(except, f.Name) {
				continue
			}
			bf := b.FieldByName(f.Name)
			if !bf.IsValid() {
				*out = append(*out, path+"."+f.Name+" (no such field on the other side)")
				continue
			}
			carried(a.Field(i), bf, path+"."+f.Name, norm, except, out)
		}
		return
	}
	av := a.Interface()
	if norm != nil {
		if n := norm(a); n != nil {
			av = n
		}
	}
	bv := b.Interface()
	if b.Type() != reflect.TypeOf(av) && reflect.TypeOf(av).ConvertibleTo(b.Type()) {
		av = reflect.ValueOf(av).Convert(b.Type()).Interface()
	}
	if !reflect.DeepEqual(av, bv) {
		*out = append(*out, fmt.Sprintf("%s (%v, carried as %v)", path, a.Interface(), bv))
	}
}
