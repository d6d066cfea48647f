//go:build kube

package nodetest_test

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/internal/nodetest"
)

func TestMain(m *testing.M) { nodetest.Main(m) }
