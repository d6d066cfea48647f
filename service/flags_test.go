package service

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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

// TestServeArgsRoundTrip: a config rendered as flags and parsed back is the
// same config, for any number of endpoints.
func TestServeArgsRoundTrip(t *testing.T) {
	want := Config{
		Layout: LayoutConfig{Mode: ModeBulkhead, PoolSize: 9, Queue: 3, MaxWait: 40 * time.Millisecond,
			PoolSizes: map[string]int{"a": 2, "b": 3, "c": 4, "db": 1}, Queues: map[string]int{"a": 0, "b": 1, "c": 2, "db": 0},
			BrokenSharedBulkhead: true},
		Timeout: 120 * time.Millisecond, Conns: 7, MaxBodyBytes: 4 << 20, GOMAXPROCS: 1,
		Defects: []Defect{DefectLeakOnTimeout, DefectRacyCounter},
		Endpoints: []Endpoint{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "b", URL: "http://127.0.0.1:2/x"}, {Name: "c", URL: "http://127.0.0.1:3"},
			{Name: "db", URL: "postgres://u@127.0.0.1:5/d?sslmode=disable", Query: "SELECT a = 1, 'x=y' FROM t"}},
	}
	// Pool groups: sizes keyed by pool (a group's name, an ungrouped
	// endpoint's), a group's endpoints in the order given.
	grouped := want
	grouped.Layout.BrokenSharedBulkhead = false
	grouped.Layout.Groups = map[string][]string{"core": {"c", "a"}, "solo": {"db"}}
	grouped.Layout.PoolSizes = map[string]int{"core": 5, "b": 3, "solo": 1}
	grouped.Layout.Queues = map[string]int{"core": 2, "b": 1, "solo": 0}
	for _, want := range []Config{want, grouped} {
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(ServeArgs(want)); err != nil {
			t.Fatal(err)
		}
		got, err := f.Config()
		if err != nil {
			t.Fatalf("Config of %v: %v", ServeArgs(want), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %v:\n got %+v\nwant %+v", ServeArgs(want), got, want)
		}
	}
	if args := strings.Join(ServeArgs(grouped), " "); !strings.Contains(args, "--pool-group core=c,a --pool-group solo=db") ||
		!strings.Contains(args, "--pool-sizes b=3,core=5,solo=1") {
		t.Errorf("ServeArgs of a grouped layout: %s, want --pool-group core=c,a --pool-group solo=db and --pool-sizes b=3,core=5,solo=1", args)
	}
	for _, d := range []DepConfig{
		{Name: "C", Latency: 3 * time.Millisecond, Jitter: time.Millisecond, Seed: 1 << 62, Size: 9},
		{Name: "D", Latency: 20 * time.Millisecond, Size: 1, Capacity: 4},
		{Name: "E", Latency: 20 * time.Millisecond, Size: 1, Capacity: 4, Queue: 8},
		{Name: "F", Latency: 10 * time.Millisecond, Size: 64, Payload: 768 << 10},
	} {
		var df DepFlags
		dfs := pflag.NewFlagSet("dep", pflag.ContinueOnError)
		df.Bind(dfs)
		if err := dfs.Parse(DepArgs(d)); err != nil {
			t.Fatal(err)
		}
		if got, err := df.Config(); err != nil || got != d {
			t.Errorf("dep round trip of %v = %+v, %v; want %+v", DepArgs(d), got, err, d)
		}
	}
	// Unlimited capacity renders no capacity flags: the command line of a
	// stub is what it was before they existed.
	if args := strings.Join(DepArgs(DepConfig{Name: "A", Size: 64}), " "); strings.Contains(args, "capacity") || strings.Contains(args, "queue") {
		t.Errorf("DepArgs of an unlimited stub = %s, want no capacity flags", args)
	}
}

// TestServeFlagsDefects: --defect is hidden and repeatable, each value a
// defect's name; an unknown or repeated name is an error naming the flag.
func TestServeFlagsDefects(t *testing.T) {
	tests := []struct {
		args    []string
		want    []Defect
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"--defect", "leak-on-error"}, []Defect{DefectLeakOnError}, ""},
		{[]string{"--defect", "leak-on-cancel", "--defect", "racy-counter"}, []Defect{DefectLeakOnCancel, DefectRacyCounter}, ""},
		{[]string{"--defect", "leak-on-eror"}, nil, `--defect: unknown test defect "leak-on-eror" (known: leak-on-error, leak-on-timeout, leak-on-cancel, racy-counter)`},
		{[]string{"--defect", "racy-counter", "--defect", "racy-counter"}, nil, "--defect: racy-counter is given twice"},
	}
	for _, tt := range tests {
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if fl := fs.Lookup(ServeDefectFlag); fl == nil || !fl.Hidden {
			t.Fatalf("flag --%s: %+v, want a hidden flag", ServeDefectFlag, fl)
		}
		if err := fs.Parse(append([]string{"--dep-a", "http://127.0.0.1:1", "--dep-b", "http://127.0.0.1:2"}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		c, err := f.Config()
		var fe *FlagError
		switch {
		case tt.wantErr == "" && (err != nil || !reflect.DeepEqual(c.Defects, tt.want)):
			t.Errorf("serve %v: defects %v, %v; want %v", tt.args, c.Defects, err, tt.want)
		case tt.wantErr != "" && (!errors.As(err, &fe) || err.Error() != tt.wantErr):
			t.Errorf("serve %v: error %v, want a *FlagError %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestServeFlagsQuery: --query gives an endpoint its query; one for an
// endpoint that does not exist, one without SQL, two for one endpoint,
// and a query on an http URL are errors naming the flag.
func TestServeFlagsQuery(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--endpoint", "a=postgres://h:1/d", "--query", "b=SELECT 1"}, "--query"},
		{[]string{"--endpoint", "a=postgres://h:1/d", "--query", "a="}, "--query"},
		{[]string{"--endpoint", "a=postgres://h:1/d", "--query", "a=SELECT 1", "--query", "a=SELECT 2"}, "--query"},
		{[]string{"--endpoint", "a=http://h:1/d", "--query", "a=SELECT 1"}, "--endpoint"},
	} {
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.Config()
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != tc.flag {
			t.Errorf("%q: %v, want an error naming %s", tc.args, err, tc.flag)
		}
	}
}

func TestParseGroups(t *testing.T) {
	tests := []struct {
		in      []string
		want    map[string][]string
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"core=checkout,cart"}, map[string][]string{"core": {"checkout", "cart"}}, ""},
		{[]string{" core = checkout , cart ", "x=stock"}, map[string][]string{"core": {"checkout", "cart"}, "x": {"stock"}}, ""},
		{[]string{"core="}, map[string][]string{"core": {}}, ""}, // the layout refuses it, naming the group
		{[]string{"core"}, nil, "is not NAME=ENDPOINT,ENDPOINT"},
		{[]string{"=a,b"}, nil, "is not NAME=ENDPOINT,ENDPOINT"},
		{[]string{"core=a,,b"}, nil, "an empty endpoint name"},
		{[]string{"core=a", "core=b"}, nil, `pool group "core" is given twice`},
	}
	for _, tt := range tests {
		got, err := ParseGroups(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("ParseGroups(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseGroups(%q) = %v, %v; want an error %q", tt.in, got, err, tt.wantErr)
		}
	}
}

// TestServeFlagsPoolGroup: --pool-group makes endpoints share a pool; the
// layout's errors about groups name the flag and the group.
func TestServeFlagsPoolGroup(t *testing.T) {
	eps := []string{"--endpoint", "a=http://127.0.0.1:1", "--endpoint", "b=http://127.0.0.1:2", "--endpoint", "c=http://127.0.0.1:3"}
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--pool-group", "ab=a,b", "--pool-size", "6"}, ""},
		{[]string{"--pool-group", "ab=a,b", "--mode", "shared"}, "--pool-group: only applies to bulkhead mode"},
		{[]string{"--pool-group", "ab=a,x"}, `--pool-group: ab[1]: no endpoint "x"`},
		{[]string{"--pool-group", "c=a,b"}, `--pool-group: c: pool name "c" is also the name of endpoint "c"`},
		{[]string{"--pool-group", "ab=a,b", "--pool-group", "bc=b,c"}, `--pool-group: bc[0]: endpoint "b" is in pool group "ab" already`},
		{[]string{"--pool-group", "ab"}, "--pool-group: \"ab\" is not NAME=ENDPOINT,ENDPOINT"},
		{[]string{"--pool-group", "ab=a,b", "--pool-sizes", "a=1,b=1,c=1"}, "--pool-sizes: unknown pool(s) a,b"},
		{[]string{"--pool-group", "ab=a,b", "--pool-size", "1"}, "--pool-size: must be at least 2 in bulkhead mode (one per pool)"},
	} {
		var f ServeFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(append(slices.Clone(eps), tt.args...)); err != nil {
			t.Fatal(err)
		}
		c, err := f.Config()
		var fe *FlagError
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("serve %v: %v", tt.args, err)
		case tt.wantErr == "" && !reflect.DeepEqual(c.Layout.Groups, map[string][]string{"ab": {"a", "b"}}):
			t.Errorf("serve %v: groups %v", tt.args, c.Layout.Groups)
		case tt.wantErr != "" && (!errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.wantErr)):
			t.Errorf("serve %v: error %v, want a *FlagError starting %q", tt.args, err, tt.wantErr)
		}
	}
}
