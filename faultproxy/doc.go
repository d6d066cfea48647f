// Package faultproxy is an HTTP reverse proxy that injects faults (latency,
// error, abort, hang, capacity, payload, throttle) per request with a
// seeded probability, with a JSON control API on a separate listener and a
// Go client for it.
//
// # Faults
//
// A [Fault] has a type and a percent, the probability (0–100) that it fires
// on one request. The decision is made per request, not per connection, by a
// random number generator derived from the proxy's seed and the request's
// sequence number, so a run with the same seed and the same request order
// makes the same decisions, and concurrent requests never share RNG state.
//
//   - latency: wait before forwarding. The delay is Latency ± Jitter
//     (distribution "uniform", the default), or heavy-tailed ("pareto",
//     "lognormal") and capped at Max. If the caller goes away during the
//     delay, the delay ends at once and the upstream is not called.
//   - error: answer at once with Status (default 503), optional Body and
//     Headers; the upstream is not called.
//   - abort: close the connection without a response; the caller sees EOF
//     or a reset.
//   - hang: send nothing until the caller gives up or the proxy closes.
//   - capacity: serve at most Capacity of the affected requests at once;
//     the others wait for a slot in arrival order, at most Queue of them
//     (beyond: 503 with X-Dep-Overloaded at once), and leave the queue if
//     their caller goes away. An optional Latency ± Jitter (any
//     distribution, as for latency) is each request's service time.
//   - payload: answer 200 with a JSON document of Size bytes.
//   - throttle: relay the body of a forwarded answer at most
//     BytesPerSecond bytes per second (its head at once).
//
// Each type is one file (latency.go, throttle.go...), registered once in
// faulttype.go: its parameters, their validation, its JSON form, its role
// below, its counterparts on the TCP and PostgreSQL planes (tcpproxy,
// pgproxy) and how it holds a call (Hold).
//
// # Combination rule
//
// Several faults may be active at once (at most one capacity fault). For
// every request each fault is rolled, independently and in list order.
// Then:
//
//  0. if the capacity fault fired, the request takes one of its slots
//     first (waiting in its queue, or answered 503 if the queue is full),
//     and holds it until its answer is complete: everything below is its
//     service, and the delay of step 1 runs from when it got the slot;
//  1. the delays of all latency faults that fired (and the capacity
//     fault's service time) add up, and the request waits for the sum (a
//     single timer);
//  2. after the wait, the first terminal fault (error, abort, hang, payload) that
//     fired, in list order, decides the outcome; the others are ignored;
//  3. if no terminal fault fired, the request is forwarded to the upstream,
//     and the body of its answer goes to the client through every throttle
//     that fired.
//
// So [latency 100%, error 100%] gives slow errors, [error 10%, abort 10%]
// gives an error on 10% of requests and an abort on 9% (10% of the other
// 90%), and two latency faults of 100 ms and 50 ms at 100% give 150 ms.
//
// # Routes
//
// A fault with a Match acts on the requests of its route only — a regular
// expression on the request's path, optionally after a method: "GET
// ^/reports/" (see ValidateRoute) — and is not set for the others, whose
// rolls it still consumes so that decisions stay reproducible. The
// proxy's classes (Config.Classes) are routes too: it counts the requests
// of each, those in flight and their durations, by class. Only a proxy
// with classes or a fault with a Match looks at a request's route.
//
// # Data plane
//
// For a plain-http upstream (and no Transport of the caller's), [Listen]
// serves the data plane with an HTTP/1.x server of the package's own and
// forwards on a pool of keep-alive upstream connections that the request's
// goroutine uses itself: the request head is forwarded as it came, but for
// hop-by-hop and client-sent forwarding headers, and bodies and answers are
// relayed as they come. Its cost per request is close to that of a TCP
// proxy. [Proxy.ServeHTTP] does the same for net/http, which serves the
// data plane for https upstreams and other transports. Injected delays end
// on a kernel timer on Linux (within tens of microseconds of their time,
// where a Go timer of an idle process is up to a millisecond late).
//
// # Control plane
//
// The faults are an immutable set swapped with an atomic pointer: the data
// plane never takes a lock that the control plane needs, so control calls
// answer in bounded time however loaded the data plane is. A request uses
// the set that was current when it arrived. See [Proxy.ControlHandler] for
// the HTTP API and [Client] for its Go client. A capacity fault's slots
// belong to its set: a new set starts with every slot free, and requests
// that hold or wait for a slot of the old one finish there.
package faultproxy
