// Package tcpproxy is the fault proxy's TCP data plane: it relays the
// connections of any TCP protocol (a database, a cache, a broker) to one
// upstream and injects faults per connection with a seeded probability,
// switchable at run time through the same control API as the HTTP plane
// (GET/PUT/DELETE /faults, /healthz, /metrics) and recorded in the same
// ledger (one entry per connection).
//
// # Faults
//
// Each fault has a percent, the probability (0–100) that it applies to a
// connection: rolled once per connection and fault set, from a generator of
// the proxy's seed, the connection's sequence number and the set, so a run
// with the same seed and connection order decides the same. Stream faults
// act on one direction, "upstream" (client to upstream), "downstream"
// (upstream to client, the default) or "both":
//
//   - latency: each chunk is written Latency ± Jitter after it was read,
//     in order, while the next ones are read (a pipelining client sees
//     the latency once, as with Toxiproxy);
//   - bandwidth: at most BytesPerSecond;
//   - timeout: data is dropped; the connection is closed Timeout after the
//     fault applies to it, or never (0);
//   - reset: Timeout after the first data, the client gets a TCP RST;
//   - slow_close: a close (FIN) is passed on Delay late;
//   - limit_data: Bytes bytes pass, then the connection is closed;
//   - slicer: chunks are written in slices of AverageSize ± SizeVariation
//     bytes, Delay apart;
//   - down: a new connection is reset as soon as it is accepted.
//
// The faults that apply to a stream act on each chunk in list order (so
// [latency, bandwidth] delays, then paces). A new set applies to new
// connections and, at once, to open ones (down excepted): each open
// connection rolls it, its streams follow it from their next chunk, and a
// timeout's clock starts when the set is put.
//
// # Data plane
//
// Each connection is two goroutines, one per direction, each reading into
// a 4 KiB buffer of its own and borrowing a 32 KiB one while its reads
// keep filling the small one; a chunk goes through the stages of the
// faults that apply, synchronously, so a pass-through connection costs a
// read and a write per chunk. A latency fault is the exception: it copies
// the chunk into the direction's delay line, whose writer goroutine (one
// while the line holds chunks) waits each one's delay and passes it on
// through the rest of its faults, in order, while the reader goes on
// reading; past Config.DelayBuffer bytes held (DefaultDelayBuffer, 4 MiB)
// the reader waits. A chunk held when the fault set changes keeps its due
// time, and data read after the change goes behind it. A half close (FIN)
// is passed on as one, after the data held.
package tcpproxy
