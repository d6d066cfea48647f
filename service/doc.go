// Package service holds the system under test: bulkhead pools (a bounded
// semaphore with a FIFO wait queue and per-pool metrics), pool layouts
// (one shared pool, one pool per endpoint or pool group, no pool at all,
// or a rate limit per dependency instead of a pool), the multi-endpoint
// HTTP service (by default /a calls dependency A and /b calls B), policy
// stacks (failsafe-go) and the dependency stub.
//
// In front of each endpoint's pool the service can run admission stages
// (admission.go): a heap ceiling that refuses requests rather than
// allocate past it, a tenant stage (one shared pool, a partition per
// tenant, or a fair share with a cap) and a priority stage (permits of a
// pool reserved for critical calls). An in-process job queue (POST /jobs)
// drains either on the request pools or on workers of its own, and each
// dependency call can hold a request's state, so that memory shows what
// an unbounded layout lets pile up.
//
// For the harness's own tests the service can be built with deliberate
// defects (Config.Defects: permits leaked on an error, timeout or cancel
// path, a pool counter that is not atomic), so that each detector can be
// shown to fail against a service that has the bug it looks for.
package service
