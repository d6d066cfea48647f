package faultproxy

import "net/http"

// abort closes the caller's connection without a response: the caller sees
// EOF or a reset. It panics with http.ErrAbortHandler, which net/http's
// server recovers silently after closing the connection (HTTP/1) or
// resetting the stream (HTTP/2). It never returns.
func abort() {
	panic(http.ErrAbortHandler)
}
