package nodetest_test

import "testing"

// TestRealNodeTests says how the real-node tests run: they are built with
// -tags node,kube only (they start kubelet, containerd and kube-proxy as
// root, take about a minute, and drive the cluster with the Kubernetes
// client libraries, which only -tags kube builds): go test -tags node,kube
// ./internal/nodetest.
func TestRealNodeTests(t *testing.T) {
	if !nodeTag {
		t.Skip("the real-node tests are built with -tags node,kube: go test -tags node,kube ./internal/nodetest (as root, after bash scripts/kube-bins.sh and bash scripts/node-bins.sh)")
	}
}
