package faultproxy

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// A faultType is everything there is to know of one type of fault, in
// the type's own file (latency.go, error.go, abort.go, hang.go,
// capacity.go, payload.go...) and registered once, in faultTypes: its
// parameters (a struct of its own, tagged `fault:"name"`), their
// validation and defaults, its role in the combination rule and its
// action on both data planes, what it does on the other planes
// (counterparts), how it changes a call's holding time (hold) and how it
// reads to a person (describe). Everything else — the control API's JSON,
// a spec's faults, the mapping onto the TCP and PostgreSQL planes, Little's
// law in the spec and the analysis — reads it from the registration.
//
// A terminal type is also an [answerer]: it answers the request on each
// data plane. The others act through the steps of the combination rule
// that both planes run for every request: a capacity fault's slot
// (capacity.go), the delay (latency.go) and the shaping of an answer
// relayed from the upstream (bodyShaper).
type faultType interface {
	// name is the type's Fault.Type.
	name() string
	// params is the zero value of the type's parameter struct, whose
	// fields are its parameters; nil for a type that takes none.
	params() any
	// validate checks f's parameters, naming them under field
	// ("faults[2]"). f.Params is of the type's struct.
	validate(f *Fault, field string) error
	// normalized returns the valid f with its defaults filled in, sharing
	// no map with f. f.Params is of the type's struct.
	normalized(f Fault) Fault
	// role is how a fault of the type that fired enters a Decision.
	role() role
	// hold is how the fault changes the time a call it fires on takes
	// (see Hold); body is the size of the dependency's answers in bytes,
	// 0 when not known.
	hold(f *Fault, body int64) Hold
	// counterparts are, by plane (PlaneTCP, PlanePostgres), what the type
	// does there; a plane without one refuses the type.
	counterparts() map[string]counterpart
	// describe says what f does, as a report or a preview shows it:
	// "latency 225ms ± 10ms".
	describe(f *Fault) string
	// example is a valid fault of the type, as documentation and tests
	// show one.
	example() Fault
}

// faultTypes are the fault types, in the order error messages, metrics
// and the documentation list them: the registry.
var faultTypes = []faultType{latencyType{}, errorType{}, abortType{}, hangType{}, capacityType{}, payloadType{}, throttleType{}}

// role is a fault type's part in the combination rule (see the package
// doc).
type role uint8

const (
	// roleTerminal: the first one that fired answers the request in the
	// upstream's place (Decision.Terminal); the type is an answerer.
	roleTerminal role = iota
	// roleDelay: its delay adds to the request's (Decision.Delay and
	// Latencies); the type is a delayer.
	roleDelay
	// roleCapacity: the request takes a slot of the set's capacity server
	// first, and its service time adds to the delay (Decision.Capacity);
	// the type is a delayer.
	roleCapacity
	// roleShape: when the request is forwarded, the body of the
	// upstream's answer goes to the client through it (Decision.Shaped,
	// shape.go); the type is a bodyShaper.
	roleShape
)

// answerer is a terminal fault type's action on the two data planes. Both
// count the fault as injected and set the ledger entry's outcome before
// they call it; it records the entry (with the answer's status, if any)
// and answers.
type answerer interface {
	// answerHTTP answers r on the net/http plane. It may abort (panic
	// with http.ErrAbortHandler).
	answerHTTP(p *Proxy, w http.ResponseWriter, r *http.Request, a answer)
	// answerRaw answers the request read on c on the raw plane and
	// reports whether c may serve another request.
	answerRaw(p *Proxy, c *rconn, a answer) bool
}

// answer is a request that a terminal fault answers. A value, so that
// handing it to an answerer allocates nothing.
type answer struct {
	set *faultSet
	d   Decision
	e   LedgerEntry
}

// fault is the terminal fault that fired.
func (a *answer) fault() *Fault { return &a.set.faults[a.d.Terminal] }

// delayer is a fault type whose fault delays a request it fires on (a
// latency fault; a capacity fault's service time).
type delayer interface {
	delayOf(f *Fault) Delay
}

// preparer is a fault type that builds something per installed fault,
// once per set (a payload fault's document); answers find it in
// faultSet.prepared.
type preparer interface {
	prepare(f *Fault) any
}

// setValidator is a fault type with a rule over a whole set (at most one
// capacity fault).
type setValidator interface {
	validateSet(fs []Fault) error
}

// terminal is embedded by the terminal fault types.
type terminal struct{}

func (terminal) role() role { return roleTerminal }

// A counterpart maps a fault onto another data plane: the fault of that
// plane's control API, as its JSON decodes (a map of the JSON keys), that
// does there what this one does over HTTP. The plane validates it. An
// error names what has no counterpart ("fault.distribution").
type counterpart func(f *Fault) (map[string]any, error)

// The data planes of the fault proxy.
const (
	PlaneHTTP     = "http"     // per request (this package)
	PlaneTCP      = "tcp"      // per connection (tcpproxy)
	PlanePostgres = "postgres" // per query (pgproxy)
)

// registered is a fault type with what the registry derives from it.
type registered struct {
	faultType
	params []Param      // in field order; nil for a type without any
	ptype  reflect.Type // of its parameter struct; nil for none
}

// registry holds the registered types by name and in order, and every
// parameter any of them takes (allParams, in order of first
// registration; a name has one kind).
var registry = func() (r struct {
	byName    map[string]*registered
	list      []*registered
	allParams []Param
}) {
	r.byName = map[string]*registered{}
	kinds := map[string]ParamKind{}
	for _, t := range faultTypes {
		rt := &registered{faultType: t}
		if z := t.params(); z != nil {
			rt.ptype = reflect.TypeOf(z)
			rt.params = paramsOfStruct(rt.ptype)
		}
		if r.byName[t.name()] != nil || t.name() == "" {
			panic("faultproxy: fault type " + t.name() + " registered twice or without a name")
		}
		for _, p := range rt.params {
			k, seen := kinds[p.Name]
			switch {
			case !seen:
				kinds[p.Name] = p.Kind
				r.allParams = append(r.allParams, p)
			case k != p.Kind:
				panic(fmt.Sprintf("faultproxy: parameter %s is a %s and a %s", p.Name, k, p.Kind))
			}
		}
		r.byName[t.name()] = rt
		r.list = append(r.list, rt)
	}
	return r
}()

// lookupType returns the fault type named name, nil if there is none.
func lookupType(name string) *registered { return registry.byName[name] }

// param returns the type's parameter named name.
func (t *registered) param(name string) (Param, bool) {
	for _, p := range t.params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// paramsOf returns f.Params as the type's parameter struct (its zero
// value for nil), and whether it is one.
func (t *registered) paramsOf(f *Fault) (any, bool) {
	switch {
	case t.ptype == nil:
		return nil, f.Params == nil
	case f.Params == nil:
		return reflect.Zero(t.ptype).Interface(), true
	}
	return f.Params, reflect.TypeOf(f.Params) == t.ptype
}

// params returns the parameters of f of type P: the zero value when f has
// none. The type's methods call it on faults whose Params are a P.
func params[P any](f *Fault) P {
	p, _ := f.Params.(P)
	return p
}

// Types returns the names of the fault types, in registration order.
func Types() []string {
	out := make([]string, len(registry.list))
	for i, t := range registry.list {
		out[i] = t.name()
	}
	return out
}

// TypeParams returns the parameters of the fault type named name, in
// order, and whether there is such a type.
func TypeParams(name string) ([]Param, bool) {
	t := lookupType(name)
	if t == nil {
		return nil, false
	}
	return slices.Clone(t.params), true
}

// AllParams returns every parameter of any fault type, in order of first
// registration; a parameter several types take (latency) is listed once.
func AllParams() []Param { return slices.Clone(registry.allParams) }

// Planes returns the data planes a fault of type name acts on: PlaneHTTP,
// then each plane it has a counterpart on (PlaneTCP, PlanePostgres); nil
// for no such type.
func Planes(name string) []string {
	t := lookupType(name)
	if t == nil {
		return nil
	}
	out := []string{PlaneHTTP}
	for _, pl := range []string{PlaneTCP, PlanePostgres} {
		if _, ok := t.counterparts()[pl]; ok {
			out = append(out, pl)
		}
	}
	return out
}

// Example returns a valid fault of type name, as documentation and tests
// show one, and whether there is such a type.
func Example(name string) (Fault, bool) {
	t := lookupType(name)
	if t == nil {
		return Fault{}, false
	}
	return t.example(), true
}

// TypesOn returns the names of the fault types that act on plane, in
// registration order.
func TypesOn(plane string) []string {
	var out []string
	for _, t := range registry.list {
		if slices.Contains(Planes(t.name()), plane) {
			out = append(out, t.name())
		}
	}
	return out
}

// latencyPlus is "latency+<type>" for every type: the name of a decision
// that is delayed and then answered, without building it per request.
var latencyPlus = func() map[string]string {
	m := make(map[string]string, len(faultTypes))
	for _, t := range faultTypes {
		m[t.name()] = TypeLatency + "+" + t.name()
	}
	return m
}()

// paramOwners lists, as "latency or capacity", the types that take the
// parameter named name.
func paramOwners(name string) string {
	var owners []string
	for _, t := range registry.list {
		if _, ok := t.param(name); ok {
			owners = append(owners, t.name())
		}
	}
	return orList(owners)
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// OnPlane maps f, a valid fault, onto plane (PlaneTCP or PlanePostgres):
// the fault of that plane's control API, as its JSON decodes, that does
// there what f does over HTTP. The error, a *FieldError, names what has
// no counterpart there: "fault.type" for a type the plane lacks (Planes),
// a parameter, or "fault.match" (a route is the HTTP plane's).
func (f Fault) OnPlane(plane string) (map[string]any, error) {
	t := lookupType(f.Type)
	if t == nil {
		return nil, fieldErr("fault.type", "unknown fault type %q (want %s)", f.Type, orList(Types()))
	}
	if f.Match != "" {
		return nil, fieldErr("fault.match", "a route (a request's method and path) is the HTTP plane's; the %s plane has none", plane)
	}
	c, ok := t.counterparts()[plane]
	if !ok {
		return nil, fieldErr("fault.type", "a %s fault has no counterpart on the %s plane (%s have)", f.Type, plane, orList(TypesOn(plane)))
	}
	if _, ok := t.paramsOf(&f); !ok {
		return nil, fieldErr("fault.type", "parameters %T are not a %s fault's", f.Params, f.Type)
	}
	return c(&f)
}

// Describe says what f does, as a report or a preview shows it: "latency
// 225ms ± 10ms on 100 % of requests".
func (f Fault) Describe() string {
	what := f.Type
	if t := lookupType(f.Type); t != nil {
		if _, ok := t.paramsOf(&f); ok {
			what = t.describe(&f)
		}
	}
	return fmt.Sprintf("%s on %g %% of requests", what, f.Percent)
}
