package spec

import (
	"strings"
	"testing"
)

const externalSpec = `name: ext
external:
  targets:   {a: "http://127.0.0.1:8080/a", b: "http://127.0.0.1:8080/b"}
  upstreams: {A: "http://127.0.0.1:9001", B: "http://127.0.0.1:9002"}
  proxies:   {A: "127.0.0.1:7001", B: "127.0.0.1:7002"}
  rules:
    - {status: "503", header: Retry-After, class: rejected}
    - {status: "2xx", class: %s}
modes: [shared]
`

// TestExternalRulesValidated checks that classification rules are decoded
// and validated when the spec loads, with the file and line.
func TestExternalRulesValidated(t *testing.T) {
	if _, err := Parse("ext.yaml", []byte(strings.Replace(externalSpec, "%s", "ok", 1))); err != nil {
		t.Fatalf("valid external spec: %v", err)
	}
	_, err := Parse("ext.yaml", []byte(strings.Replace(externalSpec, "%s", "nope", 1)))
	if err == nil || !strings.Contains(err.Error(), "ext.yaml:8: external.rules[1]:") || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("bad class: got %v, want ext.yaml:8: external.rules[1]: ... \"nope\"", err)
	}
}
