package loopback

import (
	"errors"
	"testing"
)

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true}, {"127.9.9.9:80", true}, {"[::1]:8080", true}, {"localhost:1", true},
		{":0", false}, {"0.0.0.0:80", false}, {"[::]:80", false}, {"10.1.2.3:80", false}, {"example.org:80", false},
	} {
		err := CheckListen("--listen", tc.addr, false)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrRemote)) {
			t.Errorf("CheckListen(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
		if err := CheckListen("--listen", tc.addr, true); err != nil {
			t.Errorf("CheckListen(%q, allowed) = %v", tc.addr, err)
		}
	}
	if err := CheckListen("--listen", "nowhere", true); err == nil {
		t.Error("a malformed address was accepted")
	}
	for _, tc := range []struct {
		u  string
		ok bool
	}{{"http://127.0.0.1:9/x", true}, {"http://[::1]/", true}, {"http://10.1.2.3:80", false}, {"https://example.org", false}} {
		if err := CheckURL("--upstream", tc.u, false); (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", tc.u, err, tc.ok)
		}
	}
}
