package nodetest_test

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/nodetest"
)

func TestMain(m *testing.M) { nodetest.Main(m) }

// TestRealNodeTests says how the real-node tests run: they are built
// with -tags node only (they start kubelet, containerd and kube-proxy as
// root, and take about a minute): go test -tags node ./internal/nodetest.
func TestRealNodeTests(t *testing.T) {
	if !nodeTag {
		t.Skip("the real-node tests are built with -tags node: go test -tags node ./internal/nodetest (as root, after bash scripts/kube-bins.sh and bash scripts/node-bins.sh)")
	}
}
