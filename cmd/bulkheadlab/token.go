package main

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/internal/ctlauth"
)

// controlToken is the token of a control surface (a proxy's control API
// and pprof, a shard) from $BULKHEADLAB_TOKEN. Without --allow-remote it
// may be unset: a surface a user starts by hand on loopback stays open to
// local processes (its Host, Origin and Content-Type checks keep browsers
// out). With --allow-remote it is required: other machines can reach the
// surface.
func controlToken(allowRemote bool) (string, error) {
	token, err := ctlauth.FromEnv()
	if err != nil {
		return "", usageError(err)
	}
	if allowRemote && token == "" {
		return "", usageError(fmt.Errorf("--allow-remote: $%s must hold the run's token (%d characters or more, e.g. openssl rand -hex 32): "+
			"beyond loopback only a client that has it may command this process", ctlauth.EnvToken, ctlauth.MinTokenLen))
	}
	return token, nil
}
