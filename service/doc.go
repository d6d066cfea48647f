// Package service holds the system under test: bulkhead pools (a bounded
// semaphore with a FIFO wait queue and per-pool metrics), pool layouts
// (one shared pool or one pool per dependency), the two-endpoint HTTP
// service (/a calls dependency A, /b calls B) and the dependency stub.
package service
