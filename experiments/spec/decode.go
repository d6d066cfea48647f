package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// scalarSetter is implemented by spec types that may be written as a
// single scalar (Duration, Condition, Mode).
type scalarSetter interface{ setScalar(string) error }

// nodeDecoder is implemented by spec types that decode their node
// themselves (Fault, whose keys are its type's parameters).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

// maxDecodeSteps bounds the nodes decoded from one document (aliases
// counted each time they are expanded), so that alias expansion cannot
// blow up. The presets take under 100.
const maxDecodeSteps = 10000

// maxDecodeBytes bounds the text of the scalars (values and map keys)
// decoded from one document, aliases counted each time they are expanded:
// without it a 2 KB document of nested aliases to one long string decodes
// into gigabytes, and the resolved spec written next to the results could
// not be loaded again (--resume) since it would exceed MaxSpecSize.
const maxDecodeBytes = MaxSpecSize / 2

// maxPathLen bounds the field path, and so the nesting (a cyclic alias
// would otherwise nest without end).
const maxPathLen = 512

var nodeType = reflect.TypeOf((*yaml.Node)(nil))

// decoder walks a yaml.Node tree into a Go value strictly: unknown fields,
// duplicate keys and wrong scalar types are problems, each with its line.
type decoder struct {
	p     *problems
	steps int
	bytes int
	full  bool
}

// spend charges one node and its text to the budget and reports whether
// decoding may go on; the first overrun is reported once, at n.
func (d *decoder) spend(n *yaml.Node, text int, path string) bool {
	if d.full {
		return false
	}
	d.steps++
	d.bytes += text
	if d.steps > maxDecodeSteps || d.bytes > maxDecodeBytes {
		d.full = true
		d.p.addAt(n.Line, path, "document too large or too many aliases")
		return false
	}
	return true
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	if !d.spend(n, len(n.Value), path) {
		return
	}
	if len(path) > maxPathLen {
		d.p.addAt(n.Line, path[:64]+"...", "nested too deeply")
		d.full = true
		return
	}
	if _, seen := d.p.lines[path]; !seen {
		d.p.lines[path] = n.Line
	}
	if v.Type() == nodeType {
		if !plainNode(n, 0) {
			d.p.addAt(n.Line, path, "no aliases, and at most 32 levels of nesting, in an opaque block")
			return
		}
		c := *n
		v.Set(reflect.ValueOf(&c))
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
		nd.decodeNode(d, n, path)
		return
	}
	if s, ok := v.Addr().Interface().(scalarSetter); ok && n.Kind == yaml.ScalarNode {
		if err := s.setScalar(n.Value); err != nil {
			d.p.addAt(n.Line, path, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	default:
		d.decodeScalar(n, v, path)
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if v.Type() == reflect.TypeOf(Duration{}) {
		d.p.addAt(n.Line, path, "want a duration like 250ms or 0.9T, got %s", kindName(n))
		return
	}
	if n.Kind != yaml.MappingNode {
		want := "a mapping"
		if _, ok := v.Addr().Interface().(scalarSetter); ok {
			want = "a name or a mapping"
		}
		d.p.addAt(n.Line, path, "want %s, got %s", want, kindName(n))
		return
	}
	fields := map[string][]int{}
	var names []string
	yamlFields(v.Type(), nil, fields, &names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		idx, ok := fields[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode:
			d.p.addAt(k.Line, path, "keys must be names")
		case !ok:
			d.p.addAt(k.Line, fp, "unknown field (known: %s)", strings.Join(names, ", "))
		case seen[k.Value]:
			d.p.addAt(k.Line, fp, "duplicate field")
		default:
			seen[k.Value] = true
			d.p.lines[fp] = k.Line
			d.decode(val, v.FieldByIndex(idx), fp)
		}
	}
}

// yamlFields lists the YAML field names of struct type t with their field
// index paths; the fields of an `yaml:",inline"` struct are t's own.
func yamlFields(t reflect.Type, prefix []int, fields map[string][]int, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		idx := append(append([]int(nil), prefix...), i)
		if f.IsExported() && tag == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			yamlFields(f.Type, idx, fields, names)
			continue
		}
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		fields[tag] = idx
		*names = append(*names, tag)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.p.addAt(n.Line, path, "want a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode || v.Type().Key().Kind() != reflect.String {
		d.p.addAt(n.Line, path, "want a mapping, got %s", kindName(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.p.addAt(k.Line, path, "keys must be scalars")
			continue
		}
		kv := reflect.ValueOf(k.Value).Convert(v.Type().Key())
		if m.MapIndex(kv).IsValid() {
			d.p.addAt(k.Line, join(path, k.Value), "duplicate key")
			continue
		}
		if !d.spend(k, len(k.Value), path) {
			return
		}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, e, join(path, k.Value))
		m.SetMapIndex(kv, e)
	}
	v.Set(m)
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.p.addAt(n.Line, path, "want a %s, got %s", typeWord(v.Kind()), kindName(n))
		return
	}
	bad := func() { d.p.addAt(n.Line, path, "want a %s, got %q", typeWord(v.Kind()), n.Value) }
	switch v.Kind() {
	case reflect.String:
		if n.Tag != "!!str" {
			d.p.addAt(n.Line, path, "want a string, got %q (quote it)", n.Value)
			return
		}
		v.SetString(n.Value)
	case reflect.Int64:
		if v.Type() == durationType {
			// A plain time.Duration (a field of a type shared with the
			// analysis): "500ms"; relative durations are spec.Duration's.
			dur, err := time.ParseDuration(n.Value)
			if n.Tag != "!!str" || err != nil || dur < 0 {
				d.p.addAt(n.Line, path, "want a duration such as 500ms or 2s, got %q", n.Value)
				return
			}
			v.SetInt(int64(dur))
			return
		}
		fallthrough
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Tag != "!!int" || err != nil || v.OverflowInt(i) {
			bad()
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			bad()
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Tag != "!!bool" || err != nil {
			bad()
			return
		}
		v.SetBool(b)
	default:
		d.p.addAt(n.Line, path, "unsupported field type %s", v.Type())
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

func typeWord(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "whole number"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	}
	return k.String()
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblem reports a YAML syntax error at its line.
func yamlProblem(p *problems, err error) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.addAt(line, "", "%s", m[2])
		return
	}
	p.addAt(0, "", "%s", strings.TrimPrefix(msg, "yaml: "))
}

// decodeSpec parses data strictly into a new Spec. Problems are reported
// into p; the returned spec is partial when p has errors.
func decodeSpec(p *problems, data []byte) (*Spec, *yaml.Node) {
	s := &Spec{}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		yamlProblem(p, err)
		return s, nil
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		p.addAt(1, "", "empty document")
		return s, nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		yamlProblem(p, err)
		return s, nil
	default:
		p.addAt(next.Line, "", "a second YAML document: a file holds one spec (remove the '---' and what follows, or split the file)")
		return s, nil
	}
	doc := root.Content[0]
	autoRepeats(doc)
	// sweep: {field: ..., values: ...} is a list of one.
	if sw := mapValue(doc, "sweep"); sw != nil && sw.Kind == yaml.MappingNode {
		c := *sw
		*sw = yaml.Node{Kind: yaml.SequenceNode, Line: c.Line, Column: c.Column, Content: []*yaml.Node{&c}}
	}
	decodeNode(p, doc, s)
	return s, doc
}

// DefaultMaxRepeats is the most rounds of `repeats: auto` without
// max_repeats.
const DefaultMaxRepeats = 10

// autoRepeats rewrites `repeats: auto` (and max_repeats) into its resolved
// form: repeats: <max>, auto_repeats: true. A max_repeats without auto is
// left for the decoder to refuse as an unknown field.
func autoRepeats(doc *yaml.Node) {
	r := mapValue(doc, "repeats")
	if r == nil || r.Kind != yaml.ScalarNode || r.Value != "auto" {
		return
	}
	r.Value, r.Tag = strconv.Itoa(DefaultMaxRepeats), "!!int"
	if m := mapValue(doc, "max_repeats"); m != nil {
		*r = *m
		deleteKey(doc, "max_repeats")
	}
	doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "auto_repeats", Line: r.Line},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true", Line: r.Line})
}

// decodeNode decodes the document node doc into s.
func decodeNode(p *problems, doc *yaml.Node, s *Spec) {
	p.lines[""] = doc.Line
	d := &decoder{p: p}
	d.decode(doc, reflect.ValueOf(s).Elem(), "")
}

// plainNode reports whether n holds no aliases and nests at most 32 deep,
// so that it can be re-encoded safely.
func plainNode(n *yaml.Node, depth int) bool {
	if n.Kind == yaml.AliasNode || depth > 32 {
		return false
	}
	for _, c := range n.Content {
		if !plainNode(c, depth+1) {
			return false
		}
	}
	return true
}
