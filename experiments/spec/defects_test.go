package spec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/bulkheadlab/bulkheadlab/experiments/plan"
	"github.com/bulkheadlab/bulkheadlab/service"
)

// defectsSpec sets two defects for the service and replaces them in one
// mode; the other modes keep the service's.
const defectsSpec = `name: t
service:
  defects: [leak-on-error, racy-counter]
conditions: [slow]
modes:
  - shared
  - bulkhead
  - {name: leaky, pools: bulkhead, defects: [leak-on-timeout], instances: 2}
`

// serveFlagsOf parses the command line that starts the service component
// c (its addresses resolved) back into the service's configuration.
func serveFlagsOf(t *testing.T, c plan.Component) service.Config {
	t.Helper()
	urls := map[string]string{}
	for _, a := range c.Service.Upstreams { // the proxies it calls, at addresses of no one
		urls[a.Component] = fmt.Sprintf("http://127.0.0.1:%d", len(urls)+1)
	}
	rc, err := c.Resolve(urls)
	if err != nil {
		t.Fatal(err)
	}
	args := rc.Args()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("%s starts as %v, want the serve command", c.Name, args)
	}
	var f service.ServeFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.String("listen", "", "")
	f.Bind(fs)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatalf("serve %v: %v", args[1:], err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatalf("serve %v: %v", args[1:], err)
	}
	return cfg
}

// TestPlanDefects: service.defects reach every service component's
// configuration and its serve flags; a mode's defects replace them in that
// mode, in every instance; the resolved spec keeps them.
func TestPlanDefects(t *testing.T) {
	s, err := Parse("t.yaml", []byte(defectsSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]service.Defect{
		"shared":   {service.DefectLeakOnError, service.DefectRacyCounter},
		"bulkhead": {service.DefectLeakOnError, service.DefectRacyCounter},
		"leaky":    {service.DefectLeakOnTimeout},
	}
	services := 0
	for _, r := range p.Runs {
		for _, c := range r.Components {
			if c.Service == nil {
				continue
			}
			services++
			if got := c.Service.Config.Defects; !reflect.DeepEqual(got, want[r.Mode]) {
				t.Errorf("run %s, %s: defects %v, want %v", r.ID, c.Name, got, want[r.Mode])
			}
			if got := serveFlagsOf(t, c).Defects; !reflect.DeepEqual(got, want[r.Mode]) {
				t.Errorf("run %s, %s: serve flags %v give defects %v, want %v", r.ID, c.Name, c.Args(), got, want[r.Mode])
			}
		}
	}
	if services != 4 {
		t.Errorf("%d service components, want 4 (one each for shared and bulkhead, two for leaky)", services)
	}
	y, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("resolved.yaml", y)
	if err != nil {
		t.Fatalf("resolved spec does not parse: %v\n%s", err, y)
	}
	if !reflect.DeepEqual(again.Service.Defects, s.Service.Defects) || !reflect.DeepEqual(again.Modes[2].Defects, s.Modes[2].Defects) {
		t.Errorf("resolved spec: defects %v and %v, want %v and %v", again.Service.Defects, again.Modes[2].Defects,
			s.Service.Defects, s.Modes[2].Defects)
	}
}

// TestPlanNoDefects: a spec without defects plans a correct service, whose
// command line has no --defect.
func TestPlanNoDefects(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nconditions: [slow]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Runs[0].Components {
		if c.Service == nil {
			continue
		}
		if c.Service.Config.Defects != nil || strings.Contains(strings.Join(c.Args(), " "), "--"+service.ServeDefectFlag) {
			t.Errorf("%s: defects %v, command line %v; want none", c.Name, c.Service.Config.Defects, c.Args())
		}
	}
}

// TestDefectsErrors: an unknown or repeated defect, an empty mode list and
// defects of a user's own service are reported with file, line and field.
func TestDefectsErrors(t *testing.T) {
	ext := "external:\n  upstreams: {A: \"http://127.0.0.1:9001\", B: \"http://127.0.0.1:9002\"}\n  proxies: {A: \"127.0.0.1:7001\", B: \"127.0.0.1:7002\"}\n  targets: {a: \"http://127.0.0.1:8080/a\", b: \"http://127.0.0.1:8080/b\"}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"name: t\nservice:\n  defects:\n    - leak-on-error\n    - leak-on-eror\n",
			`t.yaml:5: service.defects[1]: unknown test defect "leak-on-eror" (known: leak-on-error, leak-on-timeout, leak-on-cancel, racy-counter)`},
		{"name: t\nservice: {defects: [racy-counter, racy-counter]}\n", "t.yaml:2: service.defects[1]: racy-counter is given twice (service.defects[0])"},
		{"name: t\nservice: {defects: leak-on-error}\n", "t.yaml:2: service.defects: want a list"},
		{"name: t\nmodes:\n  - shared\n  - name: bulkhead\n    defects: [leak]\n", `t.yaml:5: modes[1].defects[0]: unknown test defect "leak"`},
		{"name: t\nmodes:\n  - {name: bulkhead, defects: []}\n", "t.yaml:3: modes[0].defects: an empty list does not turn service.defects off"},
		{"name: t\n" + ext + "service: {defects: [leak-on-cancel]}\n", "service.defects: are test defects of the built-in service"},
		{"name: t\n" + ext + "modes:\n  - {name: bulkhead, defects: [leak-on-cancel]}\n", "modes[0].defects: are test defects of the built-in service"},
		{"name: t\nservice: {defects: [racy-counter]}\nmodes:\n  - {name: fs, pools: bulkhead, policies: {A: {bulkhead: failsafe}}}\n",
			"t.yaml:4: modes[0].policies.A.bulkhead: failsafe cannot be combined with the test defects (racy-counter)"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}
