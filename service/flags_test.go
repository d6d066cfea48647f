package service

import (
	"reflect"
	"testing"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int
		wantErr bool
	}{
		{"", nil, false},
		{"a=10,b=10", map[string]int{"a": 10, "b": 10}, false},
		{" a = 3 , b=0", map[string]int{"a": 3, "b": 0}, false},
		{"a=1,a=2", nil, true},
		{"a", nil, true},
		{"a=", nil, true},
		{"=3", nil, true},
		{"a=-1", nil, true},
		{"a=x", nil, true},
		{"a=1,,b=2", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseSizes(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseSizes(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"a=10,b=10", "", "a=", "a=1,a=1", " b = 2 ", "a=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseSizes(s)
		if err != nil {
			return
		}
		for k, v := range m {
			if k == "" || v < 0 {
				t.Fatalf("ParseSizes(%q) accepted %q=%d", s, k, v)
			}
		}
	})
}
