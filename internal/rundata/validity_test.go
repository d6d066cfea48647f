package rundata

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/fields"
)

// TestBrokenRoundTrip: every field of a validity record survives JSON, in
// a phase record, a verdict and an attempt, so that a field added without
// its tag (or with a tag that loses it) fails here.
func TestBrokenRoundTrip(t *testing.T) {
	var b Broken
	fields.Fill(&b, func(path string, v reflect.Value) bool {
		switch {
		case strings.HasSuffix(path, ".Class"):
			v.Set(reflect.ValueOf(ClassTransportError))
		case strings.HasSuffix(path, ".Rule"):
			v.Set(reflect.ValueOf(RuleShardLag))
		case strings.HasSuffix(path, ".Unit"):
			v.Set(reflect.ValueOf(UnitPercent))
		default:
			return false
		}
		return true
	})
	if err := b.Check(); err != nil {
		t.Fatalf("the filled record %+v is not one of the contract: %v", b, err)
	}
	for _, tc := range []struct {
		name     string
		in, out  any
		unbroken func(any) []Broken
	}{
		{"phases.json", &PhaseStats{Broken: []Broken{b}}, &PhaseStats{}, func(v any) []Broken { return v.(*PhaseStats).Broken }},
		{"meta.json validity", &PhaseValidity{Broken: []Broken{b}}, &PhaseValidity{}, func(v any) []Broken { return v.(*PhaseValidity).Broken }},
		{"meta.json attempts", &Attempt{Broken: []Broken{b}}, &Attempt{}, func(v any) []Broken { return v.(*Attempt).Broken }},
	} {
		data, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, tc.out); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.unbroken(tc.out); len(got) != 1 || !reflect.DeepEqual(got[0], b) {
			t.Errorf("%s: %s\nread back as %+v,\nwant %+v", tc.name, data, got, b)
		}
	}
}

// TestBrokenCheck: a record that is not one of the contract is refused
// with the field it is wrong in.
func TestBrokenCheck(t *testing.T) {
	one := 1
	good := Broken{Rule: RuleLag, Endpoint: "a", Phase: "fault", Measured: 6e6, Limit: 5e6, Unit: UnitNanos}
	for _, tc := range []struct {
		edit  func(*Broken)
		field string
	}{
		{func(b *Broken) {}, ""},
		{func(b *Broken) { b.Rule = "slow" }, "rule"},
		{func(b *Broken) { b.Rule = "" }, "rule"},
		{func(b *Broken) { b.Unit = "furlongs" }, "unit"},
		{func(b *Broken) { b.Endpoint = "" }, "endpoint"},
		{func(b *Broken) { b.Phase = "" }, "phase"},
		{func(b *Broken) { b.Count = -1 }, "count"},
		{func(b *Broken) { b.Of = -1 }, "of"},
		{func(b *Broken) { b.Shard = &one }, "shard"},
		{func(b *Broken) { b.Rule = RuleShardLate }, "shard"},
		{func(b *Broken) { b.Rule, b.Shard = RuleShardLate, &one }, ""},
		{func(b *Broken) { b.Rule, b.Shard = RuleShardsMissing, &one }, "shard"},
		{func(b *Broken) { b.Rule, b.Shard = RuleShardLate, new(int); *b.Shard = -2 }, "shard"},
		{func(b *Broken) { b.Classes = []ClassShare{{Class: NumClasses, Share: 1}} }, "classes[0].class"},
	} {
		b := good
		tc.edit(&b)
		err := b.Check()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("Check(%+v) = %v, want nil", b, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("Check(%+v) = %v, want an error of field %q", b, err, tc.field)
		}
	}
}

// TestRulesListsEveryRule: every constant of type Rule declared in this
// package is in Rules (a rule added without it would never be named,
// ordered or known to the analysis), and no two share an id.
func TestRulesListsEveryRule(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "validity.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []Rule
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || fmtExpr(vs.Type) != "Rule" {
			return true
		}
		for _, v := range vs.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok {
				t.Fatalf("a Rule constant's value is not a literal: %T", v)
			}
			s, _ := strconv.Unquote(lit.Value)
			declared = append(declared, Rule(s))
		}
		return true
	})
	if len(declared) == 0 {
		t.Fatal("found no Rule constants in validity.go")
	}
	for _, r := range declared {
		if !slices.Contains(Rules, r) {
			t.Errorf("rule %q is declared but not in Rules", r)
		}
	}
	if len(declared) != len(Rules) || len(slices.Compact(slices.Sorted(slices.Values(Rules)))) != len(Rules) {
		t.Errorf("Rules %q, declared %q: want each declared rule once", Rules, declared)
	}
}

func fmtExpr(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
