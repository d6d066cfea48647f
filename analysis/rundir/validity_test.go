package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/internal/synth"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// validityRun writes a complete INVALID run (its fault phase's sends
// short, as records) and returns its folder, its index entry and its
// meta.json with the validity verdicts replaced by a placeholder.
func validityRun(t testing.TB) (string, rundata.IndexEntry, []byte, []byte) {
	t.Helper()
	base := synth.Write(t, t.TempDir(), "", []synth.Run{{Cond: "slow", Mode: "shared", Repeat: 1, Seed: 1, Invalid: true}})
	var idx rundata.Index
	b, err := os.ReadFile(filepath.Join(base, rundata.IndexFile))
	if err != nil || json.Unmarshal(b, &idx) != nil {
		t.Fatalf("index: %v", err)
	}
	run := filepath.Join(base, rundata.RunsDir, idx.Runs[0].ID)
	var meta map[string]json.RawMessage
	if b, err = os.ReadFile(filepath.Join(run, rundata.MetaFile)); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("meta: %v", err)
	}
	var validity bytes.Buffer
	if err := json.Compact(&validity, meta["validity"]); err != nil {
		t.Fatal(err)
	}
	meta["validity"] = json.RawMessage(`"@validity@"`)
	tmpl, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	return run, idx.Runs[0], tmpl, validity.Bytes()
}

// FuzzValidityRecords feeds arbitrary bytes to the reader of the validity
// records as meta.json (decodeJSON, then checkValidity, as loadRun reads a
// run): it never panics, what it cannot decode is an error that names the
// file, every finding names meta.json and the field, and a decoded record
// that is not of the contract is found, by its field.
//
//	go test -run '^$' -fuzz FuzzValidityRecords -fuzztime 1m ./analysis/rundir
func FuzzValidityRecords(f *testing.F) {
	_, _, tmpl, validity := validityRun(f)
	meta := func(v []byte) []byte { return bytes.Replace(tmpl, []byte(`"@validity@"`), v, 1) }
	f.Add(meta(validity))
	for _, edit := range [][2]string{
		{`"rule":"rate"`, `"rule":"too slow"`},
		{`"unit":"/s"`, `"unit":"furlongs"`},
		{`"measured":180`, `"measured":"180/s"`},
		{`"count":1800`, `"count":-1`},
		{`"endpoint":"a","phase":"fault","measured"`, `"endpoint":"b","phase":"fault","measured"`},
		{`"broken":[`, `"reasons":["achieved rate 180/s"],"x":[`},
	} {
		f.Add(meta(bytes.Replace(validity, []byte(edit[0]), []byte(edit[1]), 1)))
	}
	f.Add(meta([]byte(`[{"endpoint":"a","phase":"fault","valid":false,"broken":[{"rule":"shard_late","endpoint":"a","phase":"fault","shard":-1}]}]`)))
	f.Add(meta([]byte(`[{"broken":[{"classes":[{"class":"nope","share":1}]}]}]`)))
	f.Add([]byte(`{"attempts":[{"broken":[null,{"rule":"lag"}]}],"validity":null}`))
	f.Add([]byte(`{"validity":[{"broken":[{}]}],`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m rundata.RunMeta
		if err := decodeJSON(data, &m); err != nil {
			if d := describe(rundata.MetaFile, err); !strings.HasPrefix(d, rundata.MetaFile+":") {
				t.Errorf("error %q does not name %s", d, rundata.MetaFile)
			}
			return
		}
		var found []string
		checkValidity(m, nil, func(file string, line int, format string, args ...any) {
			found = append(found, file+": "+fmt.Sprintf(format, args...))
		})
		for _, d := range found {
			if !strings.HasPrefix(d, rundata.MetaFile+": validity[") && !strings.HasPrefix(d, rundata.MetaFile+": attempts[") {
				t.Errorf("finding %q does not name %s and the field", d, rundata.MetaFile)
			}
		}
		for i, v := range m.Validity {
			for j, b := range v.Broken {
				var fe *rundata.FieldError
				if err := b.Check(); errors.As(err, &fe) {
					if want := fmt.Sprintf("%s: validity[%d].broken[%d].%s: ", rundata.MetaFile, i, j, fe.Field); !containsPrefix(found, want) {
						t.Errorf("record %+v (%v) is not found as %q…: %q", b, err, want, found)
					}
				} else if err != nil {
					t.Errorf("Check(%+v) = %v, not a *FieldError", b, err)
				}
			}
		}
	})
}

func containsPrefix(v []string, prefix string) bool {
	for _, s := range v {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestValidityDamage: records that are not of the contract, of another
// endpoint's phase, or missing from an INVALID verdict (an older
// bulkheadlab's reasons in words) make the run damaged, naming meta.json
// and the field; the sound records do not.
func TestValidityDamage(t *testing.T) {
	run, entry, tmpl, validity := validityRun(t)
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"sound", "", "", ""},
		{"unknown rule", `"rule":"rate"`, `"rule":"slow sends"`, `meta.json: validity[2].broken[0].rule: "slow sends" is not a validity rule`},
		{"another phase's", `"rule":"rate","endpoint":"a","phase":"fault"`, `"rule":"rate","endpoint":"a","phase":"baseline"`,
			"meta.json: validity[2].broken[0]: a record of a/baseline in the verdict of a/fault"},
		{"words of an older version", `"broken":[{"rule":"rate","endpoint":"a"`, `"reasons":["achieved rate 180/s is 10% below target 200/s"],"x":[{"rule":"rate","endpoint":"a"`,
			"meta.json: validity[2] (a/fault): INVALID without a record of the rules it broke"},
		{"not a number", `"measured":180`, `"measured":"180"`, "meta.json: json: cannot unmarshal string into Go struct field"},
	} {
		dir := t.TempDir()
		rd := filepath.Join(dir, entry.ID)
		if err := os.CopyFS(rd, os.DirFS(run)); err != nil {
			t.Fatal(err)
		}
		v := validity
		if tc.from != "" {
			if !bytes.Contains(v, []byte(tc.from)) {
				t.Fatalf("%s: %s not in %s", tc.name, tc.from, v)
			}
			v = bytes.Replace(v, []byte(tc.from), []byte(tc.to), 1)
		}
		if err := os.WriteFile(filepath.Join(rd, rundata.MetaFile), bytes.Replace(tmpl, []byte(`"@validity@"`), v, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		r := loadRun(rd, entry)
		switch {
		case tc.want == "" && len(r.Damaged) > 0:
			t.Errorf("%s: damaged %q", tc.name, r.Damaged)
		case tc.want != "" && !containsPrefix(r.Damaged, tc.want):
			t.Errorf("%s: damaged %q, want %q…", tc.name, r.Damaged, tc.want)
		}
	}
}
