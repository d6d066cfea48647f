//go:build !(linux && (amd64 || arm64))

package faultproxy

import "errors"

func newKernelTimer() (kernelTimer, error) {
	return nil, errors.New("faultproxy: no kernel timer on this platform")
}
