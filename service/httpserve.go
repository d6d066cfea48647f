package service

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds the graceful part of Serve's shutdown; connections
// still open after it are closed.
const ShutdownTimeout = 4 * time.Second

// Server timeouts. Requests to the service and the stub have no body, so
// reading one is quick; a connection idle longer than IdleTimeout is closed
// (the load generator keeps its connections busy; a forgotten keep-alive
// connection must not stay open forever).
const (
	ReadTimeout = 10 * time.Second
	IdleTimeout = 30 * time.Second
)

// idleTimeout is IdleTimeout, shortened by tests.
var idleTimeout = IdleTimeout

// ServeHTTP serves h on ln until ctx ends, then shuts down gracefully
// within ShutdownTimeout. writeTimeout bounds one response: longer than the
// longest answer the component may legitimately take (0: none, for a
// response that streams for a whole run). It returns nil after
// a ctx-driven shutdown and the server's error otherwise. ln is closed on
// return.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, writeTimeout time.Duration) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // forced close after the grace period is still a clean exit
	}
	return err
}
