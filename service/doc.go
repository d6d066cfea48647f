// Package service holds the system under test: bulkhead pools (a bounded
// semaphore with a FIFO wait queue and per-pool metrics), pool layouts
// (one shared pool or one pool per dependency), the two-endpoint HTTP
// service (/a calls dependency A, /b calls B) and the dependency stub.
//
// For the harness's own tests the service can be built with deliberate
// defects (Config.Defects: permits leaked on an error, timeout or cancel
// path, a pool counter that is not atomic), so that each detector can be
// shown to fail against a service that has the bug it looks for.
package service
