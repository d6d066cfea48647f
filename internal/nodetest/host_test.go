//go:build node && kube

package nodetest

import (
	"path/filepath"
	"testing"
)

// The kubelet's root is a tmpfs of the node's own in which a socket can
// be renamed, and unmountUnder takes it away again.
func TestKubeletRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "kubelet")
	if err := kubeletRoot(root); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(root); len(got) != 1 || got[0] != root {
		t.Errorf("mounts under the root: %v, want the root's tmpfs", got)
	}
	if err := renameSocket(root); err != nil {
		t.Errorf("renaming a socket in the root: %v", err)
	}
	if err := unmountUnder(root); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(root); len(got) != 0 {
		t.Errorf("left mounted: %v", got)
	}
	if err := renameSocket(filepath.Join(root, "missing")); err == nil {
		t.Errorf("renaming a socket in a missing directory: %v, want an error", err)
	}
}
