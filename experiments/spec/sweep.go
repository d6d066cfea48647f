package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// sizingPart is a spec as its sizing family sees it: expectations.sizing
// over a swept mode.
type sizingPart struct{ *Spec }

// Sweep is one swept field of a spec: every value is one point of the
// experiment, and several sweeps make a grid (every combination).
//
//	sweep:
//	  field: modes.limited.policies.A.limit   # a path through the spec
//	  values: [2, 4, 6, 8, 12, 16, 24]        # or range: {from: 2, to: 24, step: 2}
//
// The path names mapping keys; in a list of modes, conditions or endpoints
// an element is named by its name ("modes.bulkhead"), or by its index
// ("conditions[0]"). A field under one mode makes variants of that mode
// ("limited.limit8"), one under one condition variants of that condition;
// any other field (service, load, dependencies, phases) makes variants of
// every mode. Each variant is a mode (or condition) of the matrix like any
// other, named <name>.<last path element><value>.
type Sweep struct {
	Field string `yaml:"field"`
	// Values are scalars as the field takes them: 8, 250ms, 0.5T.
	Values []*yaml.Node `yaml:"values,omitempty"`
	Range  *SweepRange  `yaml:"range,omitempty"`
}

// SweepRange is the values from From to To (inclusive) in steps of Step.
type SweepRange struct {
	From float64 `yaml:"from"`
	To   float64 `yaml:"to"`
	Step float64 `yaml:"step"`
}

// Limits of a sweep.
const (
	maxSweepValues = 100
	maxSweepPoints = 400
)

// sweepInfo is what a swept spec keeps of its sweep: the base spec (the
// document without its sweep, resolved), the spec of every point, and the
// variants of modes and conditions.
type sweepInfo struct {
	base    *Spec
	fields  []sweepField
	points  map[string]*Spec // by pointKey of a full assignment
	modes   map[string]variant
	conds   map[string]variant
	ordered [][]string // every point's values, in grid order
}

// sweepField is a validated Sweep.
type sweepField struct {
	path   []string
	field  string
	label  string // the last path element, for variant names
	values []string
	// scope is "mode", "condition" or "" (every mode); name is the mode
	// or condition it belongs to.
	scope, name string
}

// variant is a mode or condition made by a sweep: its original name and
// the values of the fields it carries (by field index; others unset).
type variant struct {
	orig   string
	values map[int]string
}

// parseSwept expands the sweep of the document root (whose decoded spec is
// s0): every point is the document with the fields set, parsed as a spec
// of its own; the returned spec is the base with the variants in its
// matrix.
func parseSwept(file string, root *yaml.Node, sweeps []Sweep, p *problems) (*Spec, error) {
	fields := validateSweeps(sweeps, p)
	if err := p.err(); err != nil {
		return nil, err
	}
	doc := cloneNode(root)
	deleteKey(doc, "sweep")
	base, err := parseNode(file, doc)
	if err != nil {
		return nil, err
	}
	for i := range fields {
		f := &fields[i]
		switch {
		case len(f.path) >= 2 && f.path[0] == "modes":
			f.scope, f.name = "mode", elementName(doc, f.path[:2])
		case len(f.path) >= 2 && f.path[0] == "conditions":
			f.scope, f.name = "condition", elementName(doc, f.path[:2])
		}
	}
	info := &sweepInfo{base: base, fields: fields, points: map[string]*Spec{}}
	info.ordered = grid(fields)
	if len(info.ordered) > maxSweepPoints {
		p.add("sweep", "%d points in the grid: at most %d", len(info.ordered), maxSweepPoints)
		return nil, p.err()
	}
	for _, vals := range info.ordered {
		d := cloneNode(doc)
		for i, f := range fields {
			if err := setPath(d, f.path, vals[i]); err != nil {
				p.add(fmt.Sprintf("sweep[%d].field", i), "%s: %v", f.field, err)
				return nil, p.err()
			}
		}
		ps, err := parseNode(file, d)
		if err != nil {
			return nil, fmt.Errorf("at sweep point %s: %w", pointLabel(fields, vals), err)
		}
		info.points[pointKey(vals)] = ps
	}
	s := info.combine()
	s.file, s.lines = file, base.lines
	s.sweep = info
	s.Sweep = sweeps
	q := &problems{file: file, lines: base.lines}
	s.validate(q)
	matrixProblems(s, q)
	if err := q.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// validateSweeps checks the sweeps and returns them with their values.
func validateSweeps(sweeps []Sweep, p *problems) []sweepField {
	var out []sweepField
	seen := map[string]bool{}
	for i, sw := range sweeps {
		path := fmt.Sprintf("sweep[%d]", i)
		parts, err := splitPath(sw.Field)
		switch {
		case err != nil:
			p.add(path+".field", "%v", err)
			continue
		case parts[0] == "sweep" || parts[0] == "name" || parts[0] == "seed" || parts[0] == "repeats":
			p.add(path+".field", "%s cannot be swept", parts[0])
			continue
		case seen[sw.Field]:
			p.add(path+".field", "%s is swept twice", sw.Field)
			continue
		case (len(sw.Values) > 0) == (sw.Range != nil):
			p.add(path, "give values or a range, one of them")
			continue
		}
		seen[sw.Field] = true
		var vals []string
		for j, n := range sw.Values {
			if n.Kind != yaml.ScalarNode {
				p.add(fmt.Sprintf("%s.values[%d]", path, j), "want a single value, got %s", kindName(n))
				continue
			}
			vals = append(vals, n.Value)
		}
		if r := sw.Range; r != nil {
			n := (r.To-r.From)/r.Step + 1
			if !(r.Step > 0) || !(r.To >= r.From) || math.IsInf(n, 0) || n > maxSweepValues {
				p.add(path+".range", "want from ≤ to and step > 0 giving at most %d values, got from %v to %v step %v", maxSweepValues, r.From, r.To, r.Step)
				continue
			}
			for k := 0; k < int(math.Floor(n+1e-9)); k++ {
				vals = append(vals, strconv.FormatFloat(r.From+float64(k)*r.Step, 'g', 10, 64))
			}
		}
		if len(vals) > maxSweepValues {
			p.add(path+".values", "%d values: at most %d", len(vals), maxSweepValues)
			continue
		}
		dup := map[string]bool{}
		for j, v := range vals {
			if v == "" || dup[v] {
				p.add(fmt.Sprintf("%s.values[%d]", path, j), "empty or repeated value %q", v)
			}
			dup[v] = true
		}
		out = append(out, sweepField{path: parts, field: sw.Field, label: labelOf(parts), values: vals})
	}
	return out
}

// splitPath splits "modes.limited.policies.A.limit" or "conditions[0].faults[1].latency".
func splitPath(field string) ([]string, error) {
	if field == "" || len(field) > 256 {
		return nil, fmt.Errorf("want a path like modes.bulkhead.pool_sizes.a, got %q", field)
	}
	var out []string
	for _, part := range strings.Split(field, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("empty element in %q", field)
		}
		out = append(out, name)
		if hasIdx {
			i, ok := strings.CutSuffix(idx, "]")
			if _, err := strconv.Atoi(i); !ok || err != nil {
				return nil, fmt.Errorf("bad index in %q", part)
			}
			out = append(out, "["+i+"]")
		}
	}
	return out, nil
}

// labelOf names a field in variant names: its last element, with the one
// before when the last is an endpoint's or dependency's short name
// (load.rates.a → rates_a).
func labelOf(path []string) string {
	var parts []string
	for _, p := range path {
		if !strings.HasPrefix(p, "[") {
			parts = append(parts, p)
		}
	}
	l := parts[len(parts)-1]
	if len(l) <= 2 && len(parts) > 1 {
		l = parts[len(parts)-2] + "_" + l
	}
	return l
}

// grid returns every combination of the fields' values, the first field
// varying slowest.
func grid(fields []sweepField) [][]string {
	out := [][]string{nil}
	for _, f := range fields {
		var next [][]string
		for _, prefix := range out {
			for _, v := range f.values {
				next = append(next, append(slices.Clone(prefix), v))
			}
		}
		out = next
	}
	return out
}

func pointKey(vals []string) string { return strings.Join(vals, "\x00") }

func pointLabel(fields []sweepField, vals []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.field + "=" + vals[i]
	}
	return strings.Join(parts, ", ")
}

// variantName is name with the labels of the fields it carries.
func variantName(name string, fields []sweepField, values map[int]string) string {
	var b strings.Builder
	b.WriteString(name)
	for i, f := range fields {
		if v, ok := values[i]; ok {
			b.WriteString("." + strings.ToLower(f.label) + sanitize(v))
		}
	}
	return b.String()
}

// sanitize keeps what a run name may hold (a-z, 0-9, '_', '-', '.').
func sanitize(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, v)
}

// carries reports whether field f makes variants of the mode (or the
// condition, cond true) named name.
func (f sweepField) carries(name string, cond bool) bool {
	if cond {
		return f.scope == "condition" && f.name == name
	}
	return f.scope == "" || (f.scope == "mode" && f.name == name)
}

// combine returns the base spec with every swept mode and condition
// replaced by its variants, taken from the points' specs.
func (info *sweepInfo) combine() *Spec {
	s := *info.base
	s.Modes, s.Conditions = nil, nil
	info.modes, info.conds = map[string]variant{}, map[string]variant{}
	for _, m := range info.base.Modes {
		s.Modes = append(s.Modes, expandVariants(info, m.Name, false, info.modes, func(ps *Spec, name string) Mode {
			mm := *ps.mode(m.Name)
			if name != mm.Name {
				mm.Pools = mm.layout() // a variant of a built-in mode keeps its layout
			}
			mm.Name = name
			return mm
		})...)
	}
	for _, c := range info.base.Conditions {
		s.Conditions = append(s.Conditions, expandVariants(info, c.Name, true, info.conds, func(ps *Spec, name string) Condition {
			cc := *ps.condition(c.Name)
			cc.Name = name
			return cc
		})...)
	}
	return &s
}

// expandVariants returns the variants of the mode or condition named name
// (itself, once, when no field carries it), recording each in vars.
func expandVariants[T any](info *sweepInfo, name string, cond bool, vars map[string]variant, make func(*Spec, string) T) []T {
	var out []T
	seen := map[string]bool{}
	for _, vals := range info.ordered {
		own := map[int]string{}
		for i, f := range info.fields {
			if f.carries(name, cond) {
				own[i] = vals[i]
			}
		}
		vn := variantName(name, info.fields, own)
		if seen[vn] {
			continue
		}
		seen[vn] = true
		if len(own) > 0 {
			vars[vn] = variant{orig: name, values: own}
		}
		out = append(out, make(info.points[pointKey(vals)], vn))
	}
	return out
}

// pointFor returns the spec of the point a run of mode and condition
// (variant names or not) belongs to, the mode's and condition's original
// names, and the values of the fields that apply to the run. A field that
// applies to neither takes its first value: it does not touch the run.
func (info *sweepInfo) pointFor(mode, cond string) (ps *Spec, origMode, origCond string, applied map[int]string) {
	vals := make([]string, len(info.fields))
	for i, f := range info.fields {
		vals[i] = f.values[0]
	}
	applied = map[int]string{}
	origMode, origCond = mode, cond
	if v, ok := info.modes[mode]; ok {
		origMode = v.orig
		maps.Copy(applied, v.values)
	}
	if v, ok := info.conds[cond]; ok {
		origCond = v.orig
		maps.Copy(applied, v.values)
	}
	for i, v := range applied {
		vals[i] = v
	}
	return info.points[pointKey(vals)], origMode, origCond, applied
}

// sweepValues describes the swept fields applied to a run, for its meta.
func (info *sweepInfo) sweepValues(applied map[int]string, origMode, origCond string) *rundata.SweepPoint {
	if len(applied) == 0 {
		return nil
	}
	sp := &rundata.SweepPoint{Mode: origMode, Condition: origCond}
	for i, f := range info.fields {
		v, ok := applied[i]
		if !ok {
			continue
		}
		fv := rundata.SweepValue{Field: f.field, Value: v, Number: math.NaN()}
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			fv.Number = x
		} else if d, err := time.ParseDuration(v); err == nil {
			fv.Number = d.Seconds()
		}
		sp.Values = append(sp.Values, fv)
	}
	return sp
}

func (s *Spec) mode(name string) *Mode {
	for i := range s.Modes {
		if s.Modes[i].Name == name {
			return &s.Modes[i]
		}
	}
	return nil
}

func (s *Spec) condition(name string) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Name == name {
			return &s.Conditions[i]
		}
	}
	return nil
}

// --- YAML node paths ---

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}

func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// elementName is the name of the list element path[:2] addresses
// ("modes.bulkhead" → bulkhead, "modes[1]" → its name).
func elementName(root *yaml.Node, path []string) string {
	n, err := walk(root, path, false)
	if err != nil {
		return strings.Trim(path[1], "[]")
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	if v := mapValue(n, "name"); v != nil {
		return v.Value
	}
	return ""
}

// setPath sets the scalar at path to value, creating missing mapping keys
// on the way; a list element named as a scalar (modes: [bulkhead])
// becomes the mapping {name: bulkhead} first.
func setPath(root *yaml.Node, path []string, value string) error {
	parent, err := walk(root, path[:len(path)-1], true)
	if err != nil {
		return err
	}
	last := path[len(path)-1]
	if strings.HasPrefix(last, "[") {
		return fmt.Errorf("the last element must be a field, not an index")
	}
	if parent.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is not inside a mapping", last)
	}
	v := mapValue(parent, last)
	if v == nil {
		parent.Content = append(parent.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: last, Line: parent.Line},
			&yaml.Node{Kind: yaml.ScalarNode, Line: parent.Line})
		v = parent.Content[len(parent.Content)-1]
	}
	if v.Kind != yaml.ScalarNode && !(v.Kind == yaml.MappingNode && len(v.Content) == 0) {
		return fmt.Errorf("%s holds %s, not a single value", last, kindName(v))
	}
	*v = yaml.Node{Kind: yaml.ScalarNode, Tag: scalarTag(value), Value: value, Line: v.Line, Column: v.Column}
	return nil
}

// scalarTag is the YAML tag a plain scalar of text v resolves to.
func scalarTag(v string) string {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return "!!int"
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return "!!float"
	}
	return "!!str"
}

// walk follows path from root; create adds missing mapping keys.
func walk(root *yaml.Node, path []string, create bool) (*yaml.Node, error) {
	n := root
	for i, part := range path {
		if n.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("%s: aliases cannot be swept", strings.Join(path[:i+1], "."))
		}
		switch {
		case n.Kind == yaml.SequenceNode:
			el, err := element(n, part)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", strings.Join(path[:i], "."), err)
			}
			n = el
		case n.Kind == yaml.MappingNode && !strings.HasPrefix(part, "["):
			v := mapValue(n, part)
			if v == nil {
				if !create {
					return nil, fmt.Errorf("no %s", strings.Join(path[:i+1], "."))
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: part, Line: n.Line},
					&yaml.Node{Kind: yaml.MappingNode, Line: n.Line})
				v = n.Content[len(n.Content)-1]
			}
			n = v
		default:
			return nil, fmt.Errorf("%s: cannot go into %s", strings.Join(path[:i+1], "."), kindName(n))
		}
	}
	return n, nil
}

// element finds a list element by "[i]" or by name; a scalar element
// found by name becomes {name: <it>} so that fields can be set on it.
func element(seq *yaml.Node, part string) (*yaml.Node, error) {
	if idx, ok := strings.CutPrefix(part, "["); ok {
		i, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
		if i < 0 || i >= len(seq.Content) {
			return nil, fmt.Errorf("no element %d (the list has %d)", i, len(seq.Content))
		}
		return promote(seq.Content[i]), nil
	}
	for _, el := range seq.Content {
		if (el.Kind == yaml.ScalarNode && el.Value == part) || (el.Kind == yaml.MappingNode && mapValue(el, "name") != nil && mapValue(el, "name").Value == part) {
			return promote(el), nil
		}
	}
	return nil, fmt.Errorf("no element named %q", part)
}

func promote(el *yaml.Node) *yaml.Node {
	if el.Kind == yaml.ScalarNode {
		name := *el
		*el = yaml.Node{Kind: yaml.MappingNode, Line: el.Line, Column: el.Column,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "name", Line: el.Line}, &name}}
	}
	return el
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// validateSizing checks expectations.sizing: its mode is swept by exactly
// one numeric field of its own, and the healthy and slow conditions are in
// the matrix.
func (s sizingPart) validateSizing(p *problems) {
	sz := s.Expectations.Sizing
	if sz == nil {
		return
	}
	const path = "expectations.sizing."
	var own []sweepField
	if info := s.sweep; info != nil {
		for _, f := range info.fields {
			if f.scope == "mode" && f.name == sz.Mode {
				own = append(own, f)
			}
		}
	}
	if len(own) != 1 {
		p.add(path+"mode", "mode %q must be swept by exactly one field under it (sweep: {field: modes.%s..., values: [...]}), it has %d", sz.Mode, sz.Mode, len(own))
	}
	for _, c := range []string{s.Expectations.Healthy, s.Expectations.Slow} {
		if s.condition(c) == nil {
			p.add(path+"mode", "the sizing claims need condition %q in the matrix", c)
		}
	}
	if sz.MaxHealthyRejection < 0 || sz.MaxHealthyRejection >= 1 {
		p.add(path+"max_healthy_rejection", "must be a share in [0, 1), got %v", sz.MaxHealthyRejection)
	}
	if sz.Headroom < 0 || sz.Headroom > 100 {
		p.add(path+"headroom", "must be between 0 (default 2) and 100, got %v", sz.Headroom)
	}
}

// MinAutoRepeats is the fewest rounds `repeats: auto` runs: the repeats a
// verdict's confidence interval needs (measure.MinRepeatsForCI).
const MinAutoRepeats = 3
