package shards

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// EnvTargets is the environment variable that gives a shard its run's
// targets (Agent.Targets): URLs separated by commas or white space.
const EnvTargets = "BULKHEADLAB_SHARD_TARGETS"

// Origin is raw's scheme://host:port, lower case, with the scheme's port
// when raw has none: what a shard compares with its run's targets. Only
// http and https URLs with a host have one.
func Origin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%q is not a URL", redact(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", fmt.Errorf("%q is not an http(s) URL with a host", u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}

// ParseTargets reads a list of target URLs (EnvTargets' value): each must
// have an Origin; the error names the one that has none.
func ParseTargets(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		o, err := Origin(f)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", EnvTargets, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// redact is raw without its user-info's password, or a placeholder when
// raw does not parse.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}
