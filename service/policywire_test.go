package service

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/fields"
)

// TestPolicyWireCarriesEveryField: the --policy JSON form has the fields of
// PolicyConfig, stage by stage, and a stack with every field set comes back
// from it unchanged; a field added to one shape and not the other fails
// here.
func TestPolicyWireCarriesEveryField(t *testing.T) {
	for _, pair := range [][2]any{
		{PolicyConfig{}, policyWire{}}, {RetryConfig{}, retryWire{}}, {BreakerConfig{}, breakerWire{}}, {LimiterConfig{}, limiterWire{}},
	} {
		if m := fields.Missing(pair[0], pair[1]); len(m) > 0 {
			t.Errorf("%T has fields its wire form %T lacks: %v", pair[0], pair[1], m)
		}
		if m := fields.Missing(pair[1], pair[0]); len(m) > 0 {
			t.Errorf("the wire form %T has fields %T lacks: %v", pair[1], pair[0], m)
		}
	}
	var pc PolicyConfig
	fields.Fill(&pc, nil)
	b, err := json.Marshal(pc)
	if err != nil {
		t.Fatal(err)
	}
	var back PolicyConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(back, pc) {
		t.Errorf("round trip through %s:\n got %+v\nwant %+v", b, back, pc)
	}
}
