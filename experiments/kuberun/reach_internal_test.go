//go:build kube

package kuberun

import (
	"strings"
	"testing"
)

// TestStatusMessage: an API server's Status is its message in words; any
// other answer its status and first line.
func TestStatusMessage(t *testing.T) {
	for _, tt := range []struct {
		status, body string
		want         string
	}{
		{"503 Service Unavailable", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"error trying to reach service: dial tcp 10.244.0.7:8081: connect: connection refused","reason":"ServiceUnavailable","code":503}`,
			"the API server answered 503 Service Unavailable: error trying to reach service: dial tcp 10.244.0.7:8081: connect: connection refused (ServiceUnavailable)"},
		{"403 Forbidden", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" is forbidden: User \"ci\" cannot get resource \"pods/proxy\"","reason":"Forbidden","code":403}`,
			`the API server answered 403 Forbidden: pods "p" is forbidden: User "ci" cannot get resource "pods/proxy" (Forbidden)`},
		{"502 Bad Gateway", "upstream went away\nmore", "answered 502 Bad Gateway: upstream went away"},
		{"500 Internal Server Error", "", "answered 500 Internal Server Error"},
	} {
		if got := statusMessage(tt.status, []byte(tt.body)); got != tt.want {
			t.Errorf("statusMessage(%q, %q) = %q, want %q", tt.status, tt.body, got, tt.want)
		}
		if strings.Contains(statusMessage(tt.status, []byte(tt.body)), "{") {
			t.Errorf("statusMessage(%q, %q) quotes JSON", tt.status, tt.body)
		}
	}
}
