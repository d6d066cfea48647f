package pgproxy

import (
	"log"

	"github.com/bulkheadlab/bulkheadlab/faultproxy/internal/connserver"
)

// Server serves a Proxy's data plane and its control API on two
// listeners (see connserver). Safe for concurrent use.
type Server = connserver.Server

// Listen binds dataAddr and controlAddr (":0" ports allowed) and starts
// serving p on them; a bind error is a *faultproxy.ListenError naming the
// plane. Stop it with Shutdown, which closes p and every connection
// without waiting for idle ones.
func Listen(p *Proxy, dataAddr, controlAddr string, errorLog *log.Logger) (*Server, error) {
	return connserver.Listen(connserver.Plane{Name: "pgproxy", Control: p.ControlHandler(),
		Serve: p.serveConn, Done: p.ctx.Done(), Logf: p.errLog.Printf, MaxConns: p.maxConns,
		Close: func() {
			p.Close()
			p.closeAll() // a connection that registers later sees the proxy closed
		}}, dataAddr, controlAddr, errorLog)
}
