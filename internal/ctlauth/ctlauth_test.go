package ctlauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const tok = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "passed") })
	tests := []struct {
		name                                 string
		token                                string
		method, path, host, origin, auth, ct string
		want                                 int
	}{
		{"token, right", tok, "PUT", "/faults", "127.0.0.1:1", "", "Bearer " + tok, "application/json", 200},
		{"token, charset param", tok, "POST", "/arm", "[::1]:1", "", "Bearer " + tok, "application/json; charset=utf-8", 200},
		{"token, GET", tok, "GET", "/faults", "localhost:9", "", "Bearer " + tok, "", 200},
		{"token, none sent", tok, "GET", "/faults", "127.0.0.1:1", "", "", "", 401},
		{"token, wrong", tok, "PUT", "/faults", "127.0.0.1:1", "", "Bearer " + strings.Repeat("0", 64), "application/json", 401},
		{"token, prefix of it", tok, "PUT", "/faults", "127.0.0.1:1", "", "Bearer " + tok[:63], "application/json", 401},
		{"token, not bearer", tok, "PUT", "/faults", "127.0.0.1:1", "", "Basic " + tok, "application/json", 401},
		// Through a Kubernetes API server's pod proxy, which deletes
		// Authorization once it has authenticated the runner.
		{"token, own header", tok, "PUT", "/faults", "10.244.0.7:8081", "", "own:" + tok, "application/json", 200},
		{"token, own header wrong", tok, "PUT", "/faults", "127.0.0.1:1", "", "own:" + strings.Repeat("0", 64), "application/json", 401},
		{"token, own header as bearer", tok, "PUT", "/faults", "127.0.0.1:1", "", "own:Bearer " + tok, "application/json", 401},
		{"token, healthz open", tok, "GET", "/healthz", "127.0.0.1:1", "", "", "", 200},
		{"token, healthz POST not open", tok, "POST", "/healthz", "127.0.0.1:1", "", "", "application/json", 401},
		{"token, metrics closed", tok, "GET", "/metrics", "127.0.0.1:1", "", "", "", 401},
		{"token, pprof closed", tok, "GET", "/debug/pprof/cmdline", "127.0.0.1:1", "", "", "", 401},
		{"token, foreign host", tok, "DELETE", "/faults", "evil.example", "", "Bearer " + tok, "application/json", 403},
		{"token, foreign origin", tok, "PUT", "/faults", "127.0.0.1:1", "http://evil.example", "Bearer " + tok, "application/json", 403},
		{"token, text/plain", tok, "POST", "/arm", "127.0.0.1:1", "", "Bearer " + tok, "text/plain", 415},
		{"token, form", tok, "POST", "/start", "127.0.0.1:1", "", "Bearer " + tok, "application/x-www-form-urlencoded", 415},
		{"token, DELETE without type", tok, "DELETE", "/faults", "127.0.0.1:1", "", "Bearer " + tok, "", 415},
		{"open, loopback", "", "PUT", "/faults", "127.0.0.1:1", "", "", "application/json", 200},
		{"open, foreign host", "", "DELETE", "/faults", "evil.example", "", "", "application/json", 403},
		{"open, foreign host on healthz", "", "GET", "/healthz", "evil.example:80", "", "", "", 403},
		{"open, bad origin", "", "GET", "/faults", "127.0.0.1", "null", "", "", 403},
		{"open, text/plain", "", "POST", "/arm", "127.0.0.1:1", "", "", "text/plain;charset=UTF-8", 415},
	}
	for _, tt := range tests {
		h := Guard(ok, tt.token)
		req := httptest.NewRequest(tt.method, "http://x"+tt.path, strings.NewReader("{}"))
		req.Host = tt.host
		auth := map[string]string{"Authorization": tt.auth}
		if own, ok := strings.CutPrefix(tt.auth, "own:"); ok {
			auth = map[string]string{HeaderToken: own}
		}
		for k, v := range auth {
			req.Header.Set(k, v)
		}
		for k, v := range map[string]string{"Origin": tt.origin, "Content-Type": tt.ct} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: %s %s Host %q Origin %q Auth %q Content-Type %q: got %d %s, want %d",
				tt.name, tt.method, tt.path, tt.host, tt.origin, tt.auth, tt.ct, rec.Code, rec.Body, tt.want)
		}
		if (rec.Code == 200) != (rec.Body.String() == "passed") {
			t.Errorf("%s: status %d but body %q", tt.name, rec.Code, rec.Body)
		}
	}
}

func TestTokens(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 64 || a == b {
		t.Fatalf("NewToken: %q then %q; want 64 hex digits, fresh each time", a, b)
	}
	for _, tc := range []struct {
		tok string
		ok  bool
	}{{a, true}, {"short", false}, {strings.Repeat("a", 31), false}, {strings.Repeat("a", 40) + " x", false}, {strings.Repeat("é", 20), false}} {
		if err := Check(tc.tok); (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tc.tok, err, tc.ok)
		}
	}
	t.Setenv(EnvToken, "short")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), EnvToken) {
		t.Errorf("FromEnv with a short token: %v, want an error naming $%s", err, EnvToken)
	}
}

func TestClientSendsTokenAndNoRedirect(t *testing.T) {
	var got []string
	srv := httptest.NewServer(Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}
	}), tok))
	defer srv.Close()
	c := Client(nil, tok)
	for _, path := range []string{"/faults", "/redirect"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"/faults": 200, "/redirect": 302}[path]; resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if strings.Join(got, ",") != "/faults,/redirect" {
		t.Errorf("served %v; the redirect must not be followed", got)
	}
	resp, err := http.Get(srv.URL + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("a plain client: %d, want 401", resp.StatusCode)
	}
	if env := StripEnv([]string{"A=1", EnvToken + "=" + tok, "B=2"}); strings.Join(env, " ") != "A=1 B=2" {
		t.Errorf("StripEnv: %v", env)
	}
}

// FuzzGuard: whatever the headers, nothing panics, and only the token
// passes a command.
func FuzzGuard(f *testing.F) {
	f.Add("127.0.0.1:1", "", "Bearer "+tok, "application/json", "PUT")
	f.Add("evil.example", "http://[::1]", "Bearer x", "text/plain", "POST")
	f.Add("[::1", "%", "", "application/json;", "GET")
	f.Fuzz(func(t *testing.T, host, origin, auth, ct, method string) {
		passed := false
		h := Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }), tok)
		req := httptest.NewRequest("GET", "http://x/faults", nil)
		req.Method, req.Host = method, host
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", ct)
		h.ServeHTTP(httptest.NewRecorder(), req)
		if passed && auth != "Bearer "+tok {
			t.Fatalf("passed with Authorization %q", auth)
		}
	})
}
