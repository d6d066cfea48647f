// Package ctlauth guards every control surface of the harness — the fault
// proxies' control APIs on every plane, the shard agent, pprof — with one
// middleware, so that only the runner of a run commands them:
//
//   - the Host, and the Origin if there is one, must name an IP address or
//     localhost (a web page whose name was made to resolve to the
//     listener's address sends its own name: DNS rebinding), else 403;
//   - with a token, every request but GET /healthz must carry
//     "Authorization: Bearer <token>" or the token in HeaderToken (what
//     reaches a pod through a Kubernetes API server's proxy, which deletes
//     Authorization), compared in constant time, else 401;
//   - a command (any method but GET and HEAD) must declare Content-Type
//     application/json, else 415: a browser sends text/plain or a form
//     cross-site without asking first, never JSON.
//
// The token is a per-run secret the runner makes with NewToken and gives
// its children in the environment variable EnvToken (never on a command
// line, which /proc and pprof's cmdline show); Client and Transport send
// it.
package ctlauth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// EnvToken is the environment variable that carries a control surface's
// token to its process.
const EnvToken = "BULKHEADLAB_TOKEN"

// tokenBytes is the entropy of a token NewToken makes.
const tokenBytes = 32

// MinTokenLen is the shortest token a control surface accepts, in
// characters (a NewToken's is 64).
const MinTokenLen = 32

// NewToken returns a fresh token: 32 random bytes from crypto/rand, hex
// (crypto/rand.Read does not fail: it crashes the program instead).
func NewToken() string {
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FromEnv returns the token in EnvToken, "" if it is unset or empty; a
// token shorter than MinTokenLen or with characters outside printable
// ASCII (which no header could carry) is an error naming the variable.
func FromEnv() (string, error) {
	t := os.Getenv(EnvToken)
	if t == "" {
		return "", nil
	}
	if err := Check(t); err != nil {
		return "", fmt.Errorf("$%s: %w", EnvToken, err)
	}
	return t, nil
}

// Check reports whether t can be a token: at least MinTokenLen characters
// of printable ASCII without spaces.
func Check(t string) error {
	if len(t) < MinTokenLen {
		return fmt.Errorf("a token of %d characters; want at least %d (bulkheadlab makes 64 hex digits per run)", len(t), MinTokenLen)
	}
	for i := range len(t) {
		if c := t[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("character %d of the token is not printable ASCII", i)
		}
	}
	return nil
}

// Guard returns h behind the package's checks. token "" means no token is
// asked (a surface a user started by hand on loopback); the Host, Origin
// and Content-Type checks hold anyway. GET and HEAD /healthz are answered
// without a token (a kubelet's readiness probe has none): the handler
// must tell nothing there but that it is up.
func Guard(h http.Handler, token string) http.Handler {
	want, wantOwn := []byte("Bearer "+token), []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LocalHost(r) {
			deny(w, http.StatusForbidden, "control API: Host and Origin must be an IP address or localhost")
			return
		}
		open := r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
		bearer := subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		own := subtle.ConstantTimeCompare([]byte(r.Header.Get(HeaderToken)), wantOwn) == 1
		if token != "" && !open && !bearer && !own {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bulkheadlab"`)
			deny(w, http.StatusUnauthorized, "control API: the run's token is required (Authorization: Bearer …)")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !isJSON(r.Header.Get("Content-Type")) {
			deny(w, http.StatusUnsupportedMediaType, "control API: a command's Content-Type must be application/json")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isJSON reports whether the media type ct is application/json.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// LocalHost reports whether r's Host, and its Origin if it has one, name
// an IP address or localhost.
func LocalHost(r *http.Request) bool {
	ok := literalHost(r.Host)
	if o := r.Header.Get("Origin"); ok && o != "" {
		u, err := url.Parse(o)
		ok = err == nil && u.Host != "" && literalHost(u.Host)
	}
	return ok
}

// literalHost reports whether hostport's host is an IP address or
// localhost.
func literalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.ParseIP(host) != nil || strings.EqualFold(host, "localhost")
}

func deny(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Transport is an http.RoundTripper that sends Token as a bearer token on
// every request. Base nil means http.DefaultTransport. Safe for
// concurrent use.
type Transport struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper: a clone of req with the
// Authorization header and HeaderToken (req itself is not changed).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Token == "" {
		return base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.Token)
	r.Header.Set(HeaderToken, t.Token)
	return base.RoundTrip(r)
}

// HeaderToken carries the token beside Authorization: a Kubernetes API
// server authenticates a request to a pod's proxy by its Authorization
// header and then deletes it, so through pods/proxy only this one reaches
// the pod (the token is the run's, not the cluster's).
const HeaderToken = "X-Bulkheadlab-Token"

// Client returns a copy of hc (nil: a zero http.Client) whose requests
// carry token and that follows no redirect (a redirect's target would get
// the token too); token "" returns hc as it is (or the zero client).
func Client(hc *http.Client, token string) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	if token == "" {
		return hc
	}
	c := *hc
	c.Transport = &Transport{Token: token, Base: hc.Transport}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// StripEnv returns env without EnvToken: the environment of a process
// that is not the harness's (a user's service) must not learn the token.
func StripEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvToken+"=") {
			out = append(out, kv)
		}
	}
	return out
}
