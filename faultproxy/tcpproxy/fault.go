package tcpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Fault types of the TCP data plane. The names are Toxiproxy's where it has
// the fault (reset_peer is accepted as a name of reset).
const (
	TypeLatency   = "latency"
	TypeBandwidth = "bandwidth"
	TypeTimeout   = "timeout"
	TypeReset     = "reset"
	TypeSlowClose = "slow_close"
	TypeLimitData = "limit_data"
	TypeSlicer    = "slicer"
	TypeDown      = "down"
)

// Types lists every fault type, in the order of the package doc.
var Types = []string{TypeLatency, TypeBandwidth, TypeTimeout, TypeReset, TypeSlowClose, TypeLimitData, TypeSlicer, TypeDown}

// Streams: the direction of the data a fault acts on, named as Toxiproxy
// names them.
const (
	// StreamUpstream is the data from the client toward the upstream.
	StreamUpstream = "upstream"
	// StreamDownstream is the data from the upstream toward the client
	// (the default, as in Toxiproxy).
	StreamDownstream = "downstream"
	// StreamBoth is both directions, each on its own.
	StreamBoth = "both"
)

// Limits on parameters, so that sums and conversions never overflow.
const (
	MaxFaults      = faultproxy.MaxFaults
	MaxDuration    = faultproxy.MaxDuration
	MaxBytesPerSec = 1 << 40
	MaxLimitBytes  = 1 << 50
	MaxSliceSize   = 1 << 20
)

// Fault is one TCP fault. Its JSON form is the control API's:
//
//	{"type":"latency","percent":100,"stream":"downstream","latency":"100ms","jitter":"10ms"}
//	{"type":"bandwidth","stream":"both","bytes_per_second":65536}
//	{"type":"timeout","timeout":"2s"}
//	{"type":"reset","timeout":"0s"}
//	{"type":"slow_close","delay":"1s"}
//	{"type":"limit_data","bytes":1024}
//	{"type":"slicer","average_size":16,"size_variation":8,"delay":"1ms"}
//	{"type":"down"}
//
// Durations are Go duration strings, or numbers in Toxiproxy's unit
// (milliseconds; microseconds for slicer's delay). Bandwidth takes
// bytes_per_second, or Toxiproxy's rate in KB/s (1000 bytes). In JSON an
// omitted percent means 100; in Go the zero value 0 never fires. A Fault
// is a value; the proxy copies it.
type Fault struct {
	// Type is one of the Type constants.
	Type string
	// Percent is the probability, 0–100, that the fault applies to a
	// connection (rolled once per connection and fault set).
	Percent float64
	// Stream is StreamUpstream, StreamDownstream or StreamBoth; empty
	// means downstream. Down acts on connections, not streams: none.
	Stream string

	// Latency and Jitter: each chunk of data waits Latency ± Jitter
	// (uniform, Jitter ≤ Latency) from when it was read, while later
	// chunks are read (up to Config.DelayBuffer bytes held); chunks keep
	// their order.
	Latency, Jitter time.Duration
	// BytesPerSecond is a bandwidth fault's rate.
	BytesPerSecond int64
	// Timeout: for timeout, when the connection is closed after the fault
	// applies to it (0: never); for reset, how long after the first data
	// the connection is reset (0: at once).
	Timeout time.Duration
	// Delay: for slow_close, how long a close is held back; for slicer,
	// the pause between slices.
	Delay time.Duration
	// Bytes is how many bytes limit_data lets through before it closes
	// the connection, at least 1.
	Bytes int64
	// AverageSize and SizeVariation are a slicer's slice length, at least
	// 1, ± a variation smaller than it.
	AverageSize, SizeVariation int
}

// ErrInvalidFault is wrapped by every validation error; it is the HTTP
// plane's, so that callers branch on one sentinel.
var ErrInvalidFault = faultproxy.ErrInvalidFault

func fieldErr(field, format string, args ...any) error {
	return &faultproxy.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// wire is the JSON form of a Fault. Durations are raw: a string or a number.
type wire struct {
	Type           string          `json:"type"`
	Percent        *float64        `json:"percent,omitempty"`
	Stream         string          `json:"stream,omitempty"`
	Latency        json.RawMessage `json:"latency,omitempty"`
	Jitter         json.RawMessage `json:"jitter,omitempty"`
	BytesPerSecond int64           `json:"bytes_per_second,omitempty"`
	Rate           int64           `json:"rate,omitempty"`
	Timeout        json.RawMessage `json:"timeout,omitempty"`
	Delay          json.RawMessage `json:"delay,omitempty"`
	Bytes          int64           `json:"bytes,omitempty"`
	AverageSize    int             `json:"average_size,omitempty"`
	SizeVariation  int             `json:"size_variation,omitempty"`
}

// MarshalJSON encodes f in the control API's form, durations as strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	p := f.Percent
	w := wire{Type: f.Type, Percent: &p, Stream: f.Stream, BytesPerSecond: f.BytesPerSecond,
		Bytes: f.Bytes, AverageSize: f.AverageSize, SizeVariation: f.SizeVariation}
	w.Latency = durJSON(f.Latency, f.Type == TypeLatency)
	w.Jitter = durJSON(f.Jitter, false)
	w.Timeout = durJSON(f.Timeout, f.Type == TypeTimeout || f.Type == TypeReset)
	w.Delay = durJSON(f.Delay, f.Type == TypeSlowClose || f.Type == TypeSlicer)
	return json.Marshal(w)
}

func durJSON(d time.Duration, always bool) json.RawMessage {
	if d == 0 && !always {
		return nil
	}
	b, _ := json.Marshal(d.String())
	return b
}

// UnmarshalJSON decodes one fault strictly (unknown fields are errors),
// normalises and validates it.
func (f *Fault) UnmarshalJSON(b []byte) error {
	g, err := decodeFault(b, "fault")
	if err != nil {
		return err
	}
	*f = g
	return nil
}

func decodeFault(b []byte, field string) (Fault, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Fault{}, fieldErr(field, "%v", err)
	}
	f := Fault{Type: w.Type, Percent: 100, Stream: w.Stream, BytesPerSecond: w.BytesPerSecond,
		Bytes: w.Bytes, AverageSize: w.AverageSize, SizeVariation: w.SizeVariation}
	if f.Type == "reset_peer" {
		f.Type = TypeReset
	}
	if w.Percent != nil {
		f.Percent = *w.Percent
	}
	if w.Rate != 0 {
		if w.BytesPerSecond != 0 {
			return Fault{}, fieldErr(field+".rate", "give bytes_per_second or rate (KB/s), not both")
		}
		if w.Rate < 0 || w.Rate > MaxBytesPerSec/1000 {
			return Fault{}, fieldErr(field+".rate", "want 1–%d KB/s, got %d", MaxBytesPerSec/1000, w.Rate)
		}
		f.BytesPerSecond = w.Rate * 1000
	}
	micro := f.Type == TypeSlicer
	for _, d := range []struct {
		name string
		raw  json.RawMessage
		to   *time.Duration
		unit time.Duration
	}{
		{"latency", w.Latency, &f.Latency, time.Millisecond},
		{"jitter", w.Jitter, &f.Jitter, time.Millisecond},
		{"timeout", w.Timeout, &f.Timeout, time.Millisecond},
		{"delay", w.Delay, &f.Delay, map[bool]time.Duration{true: time.Microsecond, false: time.Millisecond}[micro]},
	} {
		v, err := parseDur(d.raw, d.unit)
		if err != nil {
			return Fault{}, fieldErr(field+"."+d.name, "%v", err)
		}
		*d.to = v
	}
	f = f.normalized()
	return f, f.validate(field)
}

// parseDur reads a Go duration string, or a number of unit.
func parseDur(raw json.RawMessage, unit time.Duration) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("want a duration such as \"100ms\", got %q", s)
		}
		return d, nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("want a duration string or a number, got %s", raw)
	}
	if math.IsNaN(n) || n < 0 || n*float64(unit) > float64(MaxDuration) {
		return 0, fmt.Errorf("want 0–%v, got %v×%v", MaxDuration, n, unit)
	}
	return time.Duration(n * float64(unit)), nil
}

// normalized fills in defaults: the downstream stream.
func (f Fault) normalized() Fault {
	if f.Stream == "" && f.Type != TypeDown {
		f.Stream = StreamDownstream
	}
	return f
}

// validate checks f's own fields; errors name field+".name".
func (f Fault) validate(field string) error {
	if math.IsNaN(f.Percent) || f.Percent < 0 || f.Percent > 100 {
		return fieldErr(field+".percent", "want 0–100, got %v", f.Percent)
	}
	switch f.Stream {
	case StreamUpstream, StreamDownstream, StreamBoth:
	case "":
		if f.Type != TypeDown {
			return fieldErr(field+".stream", "required")
		}
	default:
		return fieldErr(field+".stream", "want upstream, downstream or both, got %q", f.Stream)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", f.Latency}, {"jitter", f.Jitter}, {"timeout", f.Timeout}, {"delay", f.Delay}} {
		if d.v < 0 || d.v > MaxDuration {
			return fieldErr(field+"."+d.name, "want 0–%v, got %v", MaxDuration, d.v)
		}
	}
	k, ok := kinds[f.Type]
	if !ok {
		return fieldErr(field+".type", "want one of %v, got %q", Types, f.Type)
	}
	if err := unused(f, k.fields, field); err != nil {
		return err
	}
	return k.validate(f, field)
}

// unused reports a parameter that f's type does not take.
func unused(f Fault, allowed []string, field string) error {
	set := map[string]bool{
		"latency": f.Latency != 0, "jitter": f.Jitter != 0, "bytes_per_second": f.BytesPerSecond != 0,
		"timeout": f.Timeout != 0, "delay": f.Delay != 0, "bytes": f.Bytes != 0,
		"average_size": f.AverageSize != 0, "size_variation": f.SizeVariation != 0,
	}
	for _, a := range allowed {
		delete(set, a)
	}
	for _, name := range []string{"latency", "jitter", "bytes_per_second", "timeout", "delay", "bytes", "average_size", "size_variation"} {
		if set[name] {
			return fieldErr(field+"."+name, "not a parameter of %s", f.Type)
		}
	}
	if f.Type == TypeDown && f.Stream != "" {
		return fieldErr(field+".stream", "not a parameter of down (it refuses connections)")
	}
	return nil
}

// ValidateFaults checks a whole set; errors name faults[i].field and wrap
// ErrInvalidFault.
func ValidateFaults(fs []Fault) error {
	if len(fs) > MaxFaults {
		return fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(fs))
	}
	for i, f := range fs {
		if err := f.normalized().validate(fmt.Sprintf("faults[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// ParseFaults decodes a control body {"faults":[...]} strictly: unknown
// fields, trailing data and invalid values are errors naming the field
// and wrapping ErrInvalidFault. A missing or null "faults" is an empty set.
func ParseFaults(r io.Reader) ([]Fault, error) {
	var w struct {
		Faults []json.RawMessage `json:"faults"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fieldErr("body", "%v", err)
	}
	if dec.More() {
		return nil, fieldErr("body", "trailing data after the JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fieldErr("body", "trailing data after the JSON object")
	}
	if len(w.Faults) > MaxFaults {
		return nil, fieldErr("faults", "at most %d faults, got %d", MaxFaults, len(w.Faults))
	}
	fs := make([]Fault, 0, len(w.Faults))
	for i, raw := range w.Faults {
		f, err := decodeFault(raw, fmt.Sprintf("faults[%d]", i))
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}
