package shards

import (
	"strings"
	"testing"
)

func TestOrigin(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"http://127.0.0.1:8080/a?b", "http://127.0.0.1:8080", ""},
		{"HTTP://Svc.NS.svc", "http://svc.ns.svc:80", ""},
		{"https://[::1]/x", "https://[::1]:443", ""},
		{"http://u:secret@10.0.0.1:81/", "http://10.0.0.1:81", ""},
		{"ftp://127.0.0.1", "", "not an http(s) URL"},
		{"http://", "", "not an http(s) URL"},
		{"http://u:secret@%zz", "", "not a URL"},
	} {
		got, err := Origin(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Origin(%q) = %q, %v; want %q, error with %q", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Origin(%q): the error shows the password: %v", tc.in, err)
		}
	}
	got, err := ParseTargets("http://a:1, https://b\nhttp://c:3")
	if err != nil || strings.Join(got, " ") != "http://a:1 https://b:443 http://c:3" {
		t.Errorf("ParseTargets: %q, %v", got, err)
	}
	if _, err := ParseTargets("http://a:1,nonsense"); err == nil || !strings.Contains(err.Error(), EnvTargets) {
		t.Errorf("ParseTargets with a bad URL: %v; want an error naming $%s", err, EnvTargets)
	}
}

func FuzzParseTargets(f *testing.F) {
	f.Add("http://127.0.0.1:8080/a, https://svc.ns.svc")
	f.Add("http://u:pw@[::1]:1 ftp://x")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTargets(s)
		if err != nil {
			return
		}
		for _, o := range got {
			if again, err := Origin(o); err != nil || again != o {
				t.Fatalf("Origin(%q) = %q, %v: not a fixed point", o, again, err)
			}
		}
	})
}
