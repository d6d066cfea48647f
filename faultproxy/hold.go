package faultproxy

import (
	"encoding/json"
	"reflect"
	"time"
)

// A Hold is how a fault changes the time that a call it fires on takes,
// as Little's law (permits in flight = arrival rate × holding time) and
// the checks of a spec see it.
type Hold struct {
	// Kind is what becomes of the call.
	Kind HoldKind
	// Mean, Least and Most are the time the fault adds to the call (to
	// the dependency's own, for HoldAdds): on average, at least, and at
	// most — Unbounded for a heavy tail, a queue, or a time that depends
	// on what is not known (the size of an answer).
	Mean, Least, Most time.Duration
	// Param names the parameter Least comes from, and Text says how, for
	// messages: "latency", "3s (jitter 0s)". Empty when Least is 0.
	Param, Text string
}

// Unbounded is a Hold's Most when there is no bound.
const Unbounded time.Duration = -1

// HoldKind is what becomes of a call a fault fires on.
type HoldKind uint8

const (
	// HoldAdds: the call goes on as it would and takes Mean longer (a
	// delay, a capacity fault's service time, a throttled answer).
	HoldAdds HoldKind = iota
	// HoldEnds: the proxy answers it at once (a payload).
	HoldEnds
	// HoldFails: the proxy fails it at once (an error, an abort).
	HoldFails
	// HoldNever: it is never answered; it ends when its caller gives up
	// (a hang).
	HoldNever
)

// Hold returns how f changes a call it fires on; body is the size of the
// dependency's answers in bytes, 0 when not known. A fault of no known
// type changes nothing (HoldAdds of 0).
func (f Fault) Hold(body int64) Hold {
	t := lookupType(f.Type)
	if t == nil {
		return Hold{}
	}
	if _, ok := t.paramsOf(&f); !ok {
		return Hold{}
	}
	return t.hold(&f, body)
}

// A RecordedHold is the Hold of one fault of a recorded fault set.
type RecordedHold struct {
	Type    string
	Percent float64
	Hold
}

// RecordedHolds reads a fault set as the runner records it — the JSON list
// of one plane's control API faults — and returns each fault's Hold, given
// the size of the dependency's answers (0: not known). A fault of a type of
// this plane's name (the TCP and PostgreSQL planes' latency, error and hang
// included) holds as that type says, read from the parameters it takes;
// keys of other planes (stream, match, code) are ignored, and a fault of
// any other type (a TCP reset) changes nothing. An error is a set that is
// not such a list, or a parameter of the wrong kind.
func RecordedHolds(raw []byte, body int64) ([]RecordedHold, error) {
	var ws []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, err
	}
	out := make([]RecordedHold, len(ws))
	for i, w := range ws {
		r := &out[i]
		for key, to := range map[string]any{"type": &r.Type, "percent": &r.Percent} {
			if v, ok := w[key]; ok {
				if err := json.Unmarshal(v, to); err != nil {
					return nil, err
				}
			}
		}
		t := lookupType(r.Type)
		if t == nil {
			continue
		}
		f := Fault{Type: r.Type, Percent: r.Percent}
		if t.ptype != nil {
			pv := reflect.New(t.ptype).Elem()
			for _, p := range t.params {
				if raw, ok := w[p.Name]; ok && string(raw) != "null" {
					if err := p.decodeJSON(raw, pv, "fault."+p.Name); err != nil {
						return nil, err
					}
				}
			}
			f.Params = pv.Interface()
		}
		r.Hold = f.Hold(body)
	}
	return out, nil
}
