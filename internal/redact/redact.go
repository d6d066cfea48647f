// Package redact keeps passwords out of what the harness writes: errors,
// logs, the console, meta.json and the copies of a spec in a results
// folder. A URL's user-info keeps its user and loses its password (as
// url.URL.Redacted writes it), and a "password" key's value is masked.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a password.
const Mask = "xxxxx"

// URL is raw with its password masked (url.URL.Redacted), or, when raw
// does not parse as a URL, raw with Text's masking.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Text(raw)
	}
	return u.Redacted()
}

var (
	// userinfo: scheme://user:password@ — the password is anything up to
	// the last @ before the host (a password may hold '@' unescaped in
	// careless text), without white space, quotes or a slash.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:'"\x60]*):[^\s/'"\x60]*@`)
	// passwordKey: password=… (a libpq DSN, a query), password: … (YAML),
	// "password": "…" (JSON), PGPASSWORD=….
	passwordKey = regexp.MustCompile(`(?i)((?:pg)?password"?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&"'\]}]+)`)
)

// Text is s with every URL's password and every password key's value
// masked.
func Text(s string) string {
	if !strings.Contains(s, "@") && !strings.Contains(strings.ToLower(s), "password") {
		return s
	}
	s = userinfo.ReplaceAllString(s, "$1:"+Mask+"@")
	return passwordKey.ReplaceAllStringFunc(s, func(m string) string {
		sub := passwordKey.FindStringSubmatch(m)
		v := sub[2]
		switch {
		case strings.HasPrefix(v, `"`):
			return sub[1] + `"` + Mask + `"`
		case strings.HasPrefix(v, `'`):
			return sub[1] + `'` + Mask + `'`
		}
		return sub[1] + Mask
	})
}

// Bytes is Text for a file's content.
func Bytes(b []byte) []byte { return []byte(Text(string(b))) }

// Masked reports whether s holds a password Text masked.
func Masked(s string) bool {
	return strings.Contains(s, ":"+Mask+"@") || passwordKey.MatchString(s) && strings.Contains(s, Mask)
}
