package faultproxy

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// A faultType is everything the proxy knows of one type of fault: the
// Fault fields it takes, how they are validated and normalised, and how a
// fault of the type that fired enters a request's Decision. Each type is
// one file (latency.go, error.go, abort.go, hang.go, capacity.go,
// payload.go) and one entry of faultTypes. A terminal type is also an
// [answerer]: it answers the request on each data plane. The two others
// act through the combination rule's first steps, which both planes run
// for every request: a capacity fault's slot (capacity.go) and the delay
// (latency.go).
type faultType interface {
	// name is the type's Fault.Type.
	name() string
	// params are the JSON names of the Fault fields the type takes (see
	// faultParams); the others must be zero.
	params() []string
	// validate checks the type's own fields of f, naming them under field
	// ("faults[2]"). The fields of other types are checked before.
	validate(f *Fault, field string) error
	// normalized returns the valid f with its defaults filled in, sharing
	// no map with f.
	normalized(f Fault) Fault
	// role is how a fault of the type that fired enters a Decision.
	role() role
}

// role is a fault type's part in the combination rule (see the package
// doc).
type role uint8

const (
	// roleTerminal: the first one that fired answers the request in the
	// upstream's place (Decision.Terminal); the type is an answerer.
	roleTerminal role = iota
	// roleDelay: its delay adds to the request's (Decision.Delay and
	// Latencies).
	roleDelay
	// roleCapacity: the request takes a slot of the set's capacity server
	// first, and its service time adds to the delay (Decision.Capacity).
	roleCapacity
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

// faultTypes are the fault types, in the order error messages and metrics
// list them.
var faultTypes = []faultType{latencyType{}, errorType{}, abortType{}, hangType{}, capacityType{}, payloadType{}}

// lookupType returns the fault type named name, nil if there is none.
func lookupType(name string) faultType {
	for _, t := range faultTypes {
		if t.name() == name {
			return t
		}
	}
	return nil
}

// typeNames lists the names of the fault types in order.
func typeNames() []string {
	out := make([]string, len(faultTypes))
	for i, t := range faultTypes {
		out[i] = t.name()
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

// faultParam is a parameter field of Fault (every field but Type and
// Percent), named as in JSON.
type faultParam struct {
	name  string // JSON name
	index int    // in Fault
}

// faultParams are Fault's parameter fields in the struct's order, which
// is the order they are checked in; each has a field of faultWire.
var faultParams = func() []faultParam {
	var out []faultParam
	ft, wt := reflect.TypeFor[Fault](), reflect.TypeFor[faultWire]()
	for i := range ft.NumField() {
		name := ft.Field(i).Name
		if name == "Type" || name == "Percent" {
			continue
		}
		w, ok := wt.FieldByName(name)
		if !ok {
			panic("faultproxy: faultWire lacks Fault." + name)
		}
		tag, _, _ := strings.Cut(w.Tag.Get("json"), ",")
		out = append(out, faultParam{name: tag, index: i})
	}
	return out
}()

// set reports whether f sets the parameter (an empty map is unset).
func (p faultParam) set(f *Fault) bool {
	v := reflect.ValueOf(f).Elem().Field(p.index)
	if v.Kind() == reflect.Map {
		return v.Len() != 0
	}
	return !v.IsZero()
}

// paramOwners lists, as "latency or capacity", the types that take the
// parameter named name.
func paramOwners(name string) string {
	var owners []string
	for _, t := range faultTypes {
		if slices.Contains(t.params(), name) {
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
