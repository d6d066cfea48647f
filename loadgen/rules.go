package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
	"gopkg.in/yaml.v3"
)

// ErrInvalidRule is wrapped by every error about a malformed classification rule.
var ErrInvalidRule = errors.New("invalid classification rule")

// Status matches an HTTP status code. Its text forms are an exact code
// ("503"), a class ("5xx"), an inclusive range ("500-504"), or "0" for
// "no response" (a transport error). The empty Status matches any code.
// JSON accepts a number as well as a string; YAML accepts either scalar.
type Status string

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s), nil }

// UnmarshalText implements encoding.TextUnmarshaler and checks the form.
func (s *Status) UnmarshalText(b []byte) error {
	v := Status(strings.TrimSpace(string(b)))
	if _, _, err := v.bounds(); err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalJSON accepts 503, "503", "5xx" and "500-504".
func (s *Status) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("%w: status %s: %v", ErrInvalidRule, b, err)
		}
		return s.UnmarshalText([]byte(n.String()))
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	return s.UnmarshalText([]byte(str))
}

// bounds returns the inclusive code range of s.
func (s Status) bounds() (lo, hi uint16, err error) {
	str := string(s)
	switch {
	case str == "":
		return 0, 999, nil
	case len(str) == 3 && strings.HasSuffix(str, "xx") && str[0] >= '1' && str[0] <= '5':
		d := uint16(str[0]-'0') * 100
		return d, d + 99, nil
	case strings.Contains(str, "-"):
		a, b, _ := strings.Cut(str, "-")
		l, err1 := parseCode(a)
		h, err2 := parseCode(b)
		if err1 != nil || err2 != nil || l > h {
			return 0, 0, fmt.Errorf("%w: status %q: want a range like 500-504", ErrInvalidRule, str)
		}
		return l, h, nil
	default:
		c, err := parseCode(str)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: status %q: want 503, 5xx, 500-504 or 0", ErrInvalidRule, str)
		}
		return c, c, nil
	}
}

func parseCode(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n > 999 {
		return 0, fmt.Errorf("bad status code %q", s)
	}
	return uint16(n), nil
}

// Rule maps results to a class. Every condition that is set must hold (AND);
// at least one must be set. Class is required when decoding.
type Rule struct {
	// Status matches the HTTP status code; empty matches any.
	Status Status `json:"status,omitempty" yaml:"status,omitempty"`
	// Header, when set, must be present in the response.
	Header string `json:"header,omitempty" yaml:"header,omitempty"`
	// Value, when set, must equal Header's first value exactly. Needs Header.
	Value string `json:"value,omitempty" yaml:"value,omitempty"`
	// Error, when set, must be a substring of the result's error text.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
	// Class is the class assigned when the rule matches.
	Class Class `json:"class" yaml:"class"`
}

// ruleWire is Rule with a pointer class, to tell "missing" from "ok".
type ruleWire struct {
	Status Status `json:"status" yaml:"status"`
	Header string `json:"header" yaml:"header"`
	Value  string `json:"value" yaml:"value"`
	Error  string `json:"error" yaml:"error"`
	Class  *Class `json:"class" yaml:"class"`
}

func (w ruleWire) rule() (Rule, error) {
	if w.Class == nil {
		return Rule{}, fmt.Errorf("%w: class is required", ErrInvalidRule)
	}
	return Rule{Status: w.Status, Header: w.Header, Value: w.Value, Error: w.Error, Class: *w.Class}, nil
}

// UnmarshalJSON decodes a rule, rejecting unknown fields and a missing class.
func (r *Rule) UnmarshalJSON(b []byte) error {
	var w ruleWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRule, err)
	}
	v, err := w.rule()
	if err == nil {
		*r = v
	}
	return err
}

// UnmarshalYAML decodes a rule, rejecting a missing class.
func (r *Rule) UnmarshalYAML(n *yaml.Node) error {
	var w ruleWire
	if err := n.Decode(&w); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRule, err)
	}
	v, err := w.rule()
	if err == nil {
		*r = v
	}
	return err
}

// Rules is an ordered rule list; the first matching rule wins. Results that
// no rule matches fall through to the generic rules: 2xx is ok, a request
// with no response (code 0) is client_timeout when the client gave up
// ("Client.Timeout", "deadline exceeded") and transport_error when the
// connection was refused, reset or closed early; anything else is other.
type Rules []Rule

// DefaultRules are the rules for the built-in service (docs/design.md §4).
func DefaultRules() Rules {
	return Rules{
		// A rate limiter's refusal (ratelimit layout) is a limiter's, not
		// a bulkhead's: over the rate, not over a limit on calls in flight.
		{Status: "503", Header: rundata.HeaderBulkheadReject, Value: rundata.RejectRate, Class: ClassLimited},
		{Status: "503", Header: rundata.HeaderBulkheadReject, Class: ClassRejected},
		{Status: "504", Header: rundata.HeaderDependencyError, Class: ClassDepTimeout},
		{Status: "502", Header: rundata.HeaderDependencyError, Class: ClassDepError},
		{Status: "503", Header: rundata.HeaderCircuitOpen, Class: ClassCircuitOpen},
		{Status: "503", Header: rundata.HeaderConcurrencyLimit, Class: ClassLimited},
	}
}

// Validate reports the first malformed rule, naming its index and field.
func (rs Rules) Validate() error {
	_, err := NewClassifier(rs)
	return err
}

type matcher struct {
	lo, hi uint16
	header string // canonical
	value  string
	errSub string
	class  Class
}

// Classifier assigns classes to results. It is immutable and safe for
// concurrent use.
type Classifier struct {
	rules []matcher
}

// NewClassifier compiles rs. Errors wrap ErrInvalidRule and name the rule.
func NewClassifier(rs Rules) (*Classifier, error) {
	c := &Classifier{rules: make([]matcher, 0, len(rs))}
	for i, r := range rs {
		lo, hi, err := r.Status.bounds()
		if err != nil {
			return nil, fmt.Errorf("rules[%d].status: %w", i, err)
		}
		switch {
		case r.Class >= NumClasses:
			return nil, fmt.Errorf("rules[%d].class: %w: %v", i, ErrInvalidRule, r.Class)
		case r.Status == "" && r.Header == "" && r.Error == "":
			return nil, fmt.Errorf("rules[%d]: %w: set at least one of status, header, error", i, ErrInvalidRule)
		case r.Value != "" && r.Header == "":
			return nil, fmt.Errorf("rules[%d].value: %w: value needs header", i, ErrInvalidRule)
		}
		c.rules = append(c.rules, matcher{lo: lo, hi: hi, header: http.CanonicalHeaderKey(r.Header),
			value: r.Value, errSub: r.Error, class: r.Class})
	}
	return c, nil
}

// Classify returns the class of a result with the given status code
// (0 = no response), response header and error text.
func (c *Classifier) Classify(code uint16, h http.Header, errText string) Class {
	for i := range c.rules {
		if m := &c.rules[i]; m.match(code, h, errText) {
			return m.class
		}
	}
	return genericClass(code, errText)
}

func (m *matcher) match(code uint16, h http.Header, errText string) bool {
	if code < m.lo || code > m.hi {
		return false
	}
	if m.errSub != "" && !strings.Contains(errText, m.errSub) {
		return false
	}
	if m.header == "" {
		return true
	}
	vs, ok := h[m.header]
	if !ok {
		return false
	}
	return m.value == "" || (len(vs) > 0 && vs[0] == m.value)
}

var timeoutTexts = []string{"Client.Timeout", "deadline exceeded", "timeout awaiting response"}

var transportTexts = []string{"connection refused", "connection reset", "EOF", "broken pipe",
	"server closed idle connection", "no route to host", "network is unreachable", "malformed HTTP"}

func genericClass(code uint16, errText string) Class {
	switch {
	case code >= 200 && code < 300:
		return ClassOK
	case code != 0:
		return ClassOther
	case containsAny(errText, timeoutTexts):
		return ClassClientTimeout
	case containsAny(errText, transportTexts), containsAny(errText, harnessTexts):
		return ClassTransportError
	}
	return ClassOther
}

// harnessTexts are error texts of failures that happen on the load
// generator's side before a request reaches the network: file-descriptor or
// local-port exhaustion, kernel buffer exhaustion, a target that cannot be
// built or resolved. They say nothing about the service under test.
var harnessTexts = []string{"too many open files", "cannot assign requested address",
	"no buffer space available", "address already in use", "unsupported protocol scheme",
	"no such host", "invalid URL", "net/http: nil Context", "http: no Host in request URL"}

// IsHarnessError reports whether a result's error text (with status code 0)
// is a load-generator-side failure rather than an outcome of the target; see
// harnessTexts. Such results are counted in the class the rules give them
// (normally transport_error) and, in addition, as harness errors, which
// count against validity.
func IsHarnessError(code uint16, errText string) bool {
	return code == 0 && errText != "" && containsAny(errText, harnessTexts)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
