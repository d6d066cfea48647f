// Package faultproxy is an HTTP reverse proxy that injects faults (latency,
// error, abort, hang) per request with a seeded probability, with a JSON
// control API on a separate listener and a Go client for it.
package faultproxy
