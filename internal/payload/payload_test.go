package payload

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		size int
		seed uint64
	}{{0, 1}, {2, 1}, {50, 1}, {200, 7}, {4096, 1}, {256 << 10, 42}, {1 << 20, 3}} {
		b := JSON(tc.size, tc.seed)
		var v []map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("JSON(%d, %d) is not a JSON array of objects: %v", tc.size, tc.seed, err)
		}
		if want := max(tc.size, 2); len(b) > want || (tc.size >= 200 && len(b) < want-160) {
			t.Errorf("JSON(%d, %d): %d bytes, want ≤ %d and within 160 of it", tc.size, tc.seed, len(b), want)
		}
		if tc.size >= 4096 && len(v) < tc.size/160 {
			t.Errorf("JSON(%d, %d): %d records, want at least %d", tc.size, tc.seed, len(v), tc.size/160)
		}
		if !bytes.Equal(b, JSON(tc.size, tc.seed)) {
			t.Errorf("JSON(%d, %d) differs between calls", tc.size, tc.seed)
		}
	}
	if bytes.Equal(JSON(4096, 1), JSON(4096, 2)) {
		t.Error("JSON(4096, 1) == JSON(4096, 2): the seed changes nothing")
	}
}

func BenchmarkDecodeGeneric(b *testing.B) {
	doc := JSON(256<<10, 1)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
	}
}
