package spec

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Fault is one fault of the proxy as a spec writes it: a type, a percent,
// and the type's parameters side by side, as the fault proxy's control API
// takes them ({type: latency, percent: 30, latency: 0.5T, jitter: 20ms}).
// The fault proxy's registration of the type (faultproxy.TypeParams) says
// which parameters it takes and how each is written; the proxy takes the
// fault as a faultproxy.Fault (proxyFault, once its durations are
// resolved).
type Fault struct {
	// Type is a fault type of the proxy: latency, error, abort, hang,
	// capacity, payload... (faultproxy.Types).
	Type string `yaml:"type"`
	// Percent of requests affected, in (0, 100]; 0 in a spec means 100.
	Percent float64 `yaml:"percent"`
	// Params are the type's parameters by name.
	Params Params `yaml:"-"`
	// Match, on a PostgreSQL dependency, is a regular expression the
	// statement's text must match for the fault to act on a query (empty:
	// every query); on an HTTP dependency, a route the request's method
	// and path must match (faultproxy.ValidateRoute). Code is an error
	// fault's SQLSTATE (postgres.go).
	Match string `yaml:"match,omitempty"`
	Code  string `yaml:"code,omitempty"`
}

// Params are a fault's parameters by name, each as a spec writes its
// kind (faultproxy.ParamKind): a Duration ("0.9T"), an int, a ByteSize
// ("256KiB"), a string or a map[string]string.
type Params map[string]any

// specType is the Go type a spec holds a parameter of kind k in.
func specType(k faultproxy.ParamKind) reflect.Type {
	switch k {
	case faultproxy.KindDuration:
		return reflect.TypeFor[Duration]()
	case faultproxy.KindInt:
		return reflect.TypeFor[int]()
	case faultproxy.KindBytes:
		return reflect.TypeFor[ByteSize]()
	case faultproxy.KindHeaders:
		return reflect.TypeFor[map[string]string]()
	}
	return reflect.TypeFor[string]()
}

// specValue is a proxy value v of a parameter (a default) as the spec
// holds it.
func specValue(p faultproxy.Param, v any) any {
	switch x := v.(type) {
	case time.Duration:
		return Abs(x)
	}
	return reflect.ValueOf(v).Convert(specType(p.Kind)).Interface()
}

// faultKeys are the keys of a fault that are not parameters.
var faultKeys = []string{"type", "percent", "match", "code"}

// paramOf returns the parameter of any fault type named name.
func paramOf(name string) (faultproxy.Param, bool) {
	for _, p := range faultproxy.AllParams() {
		if p.Name == name {
			return p, true
		}
	}
	return faultproxy.Param{}, false
}

// decodeNode decodes a fault: its own keys into its fields, every other
// key that a fault type takes into Params (in the Go type of its kind), and
// refuses any other key.
func (f *Fault) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		d.p.addAt(n.Line, path, "want a mapping, got %s", kindName(n))
		return
	}
	own := map[string][]int{}
	var names []string
	yamlFields(reflect.TypeFor[Fault](), nil, own, &names)
	v := reflect.ValueOf(f).Elem()
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		p, isParam := paramOf(k.Value)
		idx, isOwn := own[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode:
			d.p.addAt(k.Line, path, "keys must be names")
			continue
		case !isOwn && !isParam:
			known := slices.Clone(faultKeys[:2])
			for _, p := range faultproxy.AllParams() {
				known = append(known, p.Name)
			}
			d.p.addAt(k.Line, fp, "unknown field (known: %s)", strings.Join(append(known, faultKeys[2:]...), ", "))
			continue
		case seen[k.Value]:
			d.p.addAt(k.Line, fp, "duplicate field")
			continue
		}
		seen[k.Value] = true
		d.p.lines[fp] = k.Line
		if isOwn {
			d.decode(val, v.FieldByIndex(idx), fp)
			continue
		}
		x := reflect.New(specType(p.Kind)).Elem()
		d.decode(val, x, fp)
		if f.Params == nil {
			f.Params = Params{}
		}
		f.Params[p.Name] = x.Interface()
	}
}

// MarshalYAML writes f as a spec does: type, percent, the parameters in
// the type's order (those set), match and code.
func (f Fault) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var vn yaml.Node
		if err := vn.Encode(v); err != nil {
			return err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &vn)
		return nil
	}
	if err := add("type", f.Type); err != nil {
		return nil, err
	}
	if err := add("percent", f.Percent); err != nil {
		return nil, err
	}
	for _, p := range f.paramOrder() {
		if v, ok := f.Params[p.Name]; ok && !reflect.ValueOf(v).IsZero() {
			if err := add(p.Name, v); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range [][2]string{{"match", f.Match}, {"code", f.Code}} {
		if kv[1] != "" {
			if err := add(kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// paramOrder is the parameters f may have, in order: its type's, then
// every other type's.
func (f Fault) paramOrder() []faultproxy.Param {
	ps, _ := faultproxy.TypeParams(f.Type)
	for _, p := range faultproxy.AllParams() {
		if !slices.ContainsFunc(ps, func(q faultproxy.Param) bool { return q.Name == p.Name }) {
			ps = append(ps, p)
		}
	}
	return ps
}

// duration returns f's duration parameter name, zero when it has none.
func (f Fault) duration(name string) Duration {
	d, _ := f.Params[name].(Duration)
	return d
}

// resolveDurations makes f's duration parameters absolute with abs.
func (f *Fault) resolveDurations(abs func(*Duration)) {
	for name, v := range f.Params {
		if d, ok := v.(Duration); ok {
			abs(&d)
			f.Params[name] = d
		}
	}
}

// fillDefaults gives each parameter of f's type that has a default and
// that the spec did not write (set) its default.
func (f *Fault) fillDefaults(set func(param string) bool) {
	ps, _ := faultproxy.TypeParams(f.Type)
	for _, p := range ps {
		if _, ok := f.Params[p.Name]; ok || p.Default == nil || set(p.Name) {
			continue
		}
		if f.Params == nil {
			f.Params = Params{}
		}
		f.Params[p.Name] = specValue(p, p.Default)
	}
}

// proxyFault is f as the fault proxy's control API takes it. Durations must
// be resolved.
func (f Fault) proxyFault() faultproxy.Fault {
	pf, _ := f.toProxy()
	return pf
}

// toProxy is proxyFault, with the error of a parameter of another type
// (a *faultproxy.FieldError naming "fault.<name>").
func (f Fault) toProxy() (faultproxy.Fault, error) {
	values := make(map[string]any, len(f.Params))
	for name, v := range f.Params {
		switch x := v.(type) {
		case Duration:
			values[name] = x.D
		case ByteSize:
			values[name] = int64(x)
		default:
			values[name] = v
		}
	}
	return faultproxy.NewFault(f.Type, f.Percent, values)
}

// validateFault checks a fault with the fault proxy's own rules, so that a
// spec that validates is one the proxy accepts when the fault phase starts.
// A parameter whose zero value stands for its default may not be written
// as zero.
func validateFault(p *problems, path string, f Fault) {
	if f.Percent <= 0 || f.Percent > 100 {
		p.add(path+".percent", "must be in (0, 100], got %g", f.Percent)
		return
	}
	ps, _ := faultproxy.TypeParams(f.Type)
	for _, q := range ps {
		if v, ok := f.Params[q.Name]; ok && q.Default != nil && reflect.ValueOf(v).IsZero() {
			got := fmt.Sprint(v)
			if _, isString := v.(string); isString {
				got = strconv.Quote(got)
			}
			p.add(path+"."+q.Name, "must be %s, got %s (leave it out for %v)", cmp.Or(q.Want, "set"), got, q.Default)
			return
		}
	}
	pf, err := f.toProxy()
	if err == nil {
		err = pf.Validate()
	}
	addProxyErr(p, path, err)
}

// addProxyErr reports err, the fault proxy's error of the fault at path,
// at the field it names (a *faultproxy.FieldError's "fault.latency").
func addProxyErr(p *problems, path string, err error) {
	var fe *faultproxy.FieldError
	switch {
	case err == nil:
	case errors.As(err, &fe):
		p.add(path+strings.TrimPrefix(fe.Field, "fault"), "%s", fe.Msg)
	default:
		p.add(path, "%v", err)
	}
}

// hold is how f changes a call to dependency dep it fires on
// (faultproxy.Hold), given the size of the dependency's answers when the
// spec knows it (the built-in stubs').
func (s *Spec) hold(f Fault, dep string) faultproxy.Hold {
	return f.proxyFault().Hold(s.answerBytes(dep))
}

// answerBytes is the size of dependency dep's answers when the spec knows
// it: the built-in stub's payload or size; 0 for a dependency of the
// user's (external mode).
func (s *Spec) answerBytes(dep string) int64 {
	if s.External != nil {
		return 0
	}
	d := s.Dependencies[dep]
	if d.Payload > 0 {
		return int64(d.Payload)
	}
	return int64(d.Size)
}

// DescribeFaults says what the condition's faults do, each as its fault
// type describes it (faultproxy.Fault.Describe): "latency 225ms ± 10ms on
// 100 % of requests", or with a match "… on 100 % of the calls that
// match" and the expression, quoted; "" for a condition without faults.
func (c *Condition) DescribeFaults() string {
	parts := make([]string, len(c.Faults))
	for i, f := range c.Faults {
		parts[i] = f.proxyFault().Describe()
		if f.Match != "" {
			m := fmt.Sprintf(" of the calls that match %q", f.Match)
			if d, ok := strings.CutSuffix(parts[i], " of requests"); ok {
				parts[i] = d + m
			} else {
				parts[i] += m
			}
		}
	}
	return strings.Join(parts, "; ")
}
