// Package ctlauthtest checks that a running control surface refuses
// foreign clients, for the tests of every surface (the proxies' planes, the
// shard agent, pprof).
package ctlauthtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Command is one request a foreign client tries.
type Command struct {
	Method, Path, Body string
}

// foreign is one way a client without the run's standing sends a command.
type foreign struct {
	name         string
	auth         func(token string) string
	host, origin string
	contentType  string
	want         int
}

// evilHost is a name that resolves to the surface's address by DNS
// rebinding, as a browser would send it.
const evilHost = "evil.example"

func foreigners() []foreign {
	bearer := func(tok string) string { return "Bearer " + tok }
	none := func(string) string { return "" }
	return []foreign{
		{name: "no token", auth: none, want: http.StatusUnauthorized},
		{name: "a wrong token", auth: func(string) string { return "Bearer " + strings.Repeat("f", 64) }, want: http.StatusUnauthorized},
		{name: "the token as basic auth", auth: func(tok string) string { return "Basic " + tok }, want: http.StatusUnauthorized},
		{name: "no token, a foreign Host", auth: none, host: evilHost, want: http.StatusForbidden},
		{name: "the token, a foreign Host", auth: bearer, host: evilHost, want: http.StatusForbidden},
		{name: "the token, a foreign Origin", auth: bearer, origin: "http://" + evilHost, want: http.StatusForbidden},
		{name: "the token, text/plain", auth: bearer, contentType: "text/plain", want: http.StatusUnsupportedMediaType},
	}
}

// Refuses sends every command of cmds to the surface at base
// ("http://host:port") in each foreign way — without the token, with a
// wrong one, with or without it under a foreign Host or Origin, as
// text/plain — and fails t unless each is refused with the status the
// guard gives (401, 403, 415). A GET is not sent as text/plain.
func Refuses(t testing.TB, base, token string, cmds []Command) {
	t.Helper()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	for _, c := range cmds {
		for _, f := range foreigners() {
			if f.contentType != "" && (c.Method == http.MethodGet || c.Method == http.MethodHead) {
				continue
			}
			req, err := http.NewRequest(c.Method, strings.TrimSuffix(base, "/")+c.Path, strings.NewReader(c.Body))
			if err != nil {
				t.Fatal(err)
			}
			if f.host != "" {
				req.Host = f.host
			}
			if f.origin != "" {
				req.Header.Set("Origin", f.origin)
			}
			if a := f.auth(token); a != "" {
				req.Header.Set("Authorization", a)
			}
			ct := "application/json"
			if f.contentType != "" {
				ct = f.contentType
			}
			req.Header.Set("Content-Type", ct)
			resp, err := hc.Do(req)
			if err != nil {
				t.Errorf("%s %s with %s: %v", c.Method, c.Path, f.name, err)
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if resp.StatusCode != f.want {
				t.Errorf("%s %s with %s: %d %s; want %d", c.Method, c.Path, f.name, resp.StatusCode, strings.TrimSpace(string(b)), f.want)
			}
		}
	}
}

// Do sends c with the token as the runner does and returns the status and
// the body (at most 64 KiB).
func Do(t testing.TB, base, token string, c Command) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.Method, strings.TrimSuffix(base, "/")+c.Path, strings.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}
