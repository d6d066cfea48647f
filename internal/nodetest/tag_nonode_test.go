//go:build !(node && kube)

package nodetest_test

// nodeTag: built with -tags node,kube.
const nodeTag = false
