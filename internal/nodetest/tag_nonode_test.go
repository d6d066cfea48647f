//go:build !node

package nodetest_test

// nodeTag: built with -tags node.
const nodeTag = false
