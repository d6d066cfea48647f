package tcpproxy

// down: a new connection it applies to is reset as soon as it is accepted
// (the client's connect succeeds, its first read or write fails with
// ECONNRESET); the upstream is not dialled. Open connections are not
// affected. Toxiproxy's nearest is disabling the proxy (enabled: false),
// which closes its listener and every open connection.

func init() {
	kinds[TypeDown] = kind{validate: func(Fault, string) error { return nil }}
}
