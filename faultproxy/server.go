package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// ListenError is returned by Listen when an address cannot be bound.
type ListenError struct {
	Plane string // "data" or "control"
	Err   error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("faultproxy: %s listener: %v", e.Plane, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Server serves a Proxy's data plane and its control API on two listeners.
// Safe for concurrent use.
type Server struct {
	proxy         *Proxy
	data, control planeServer
	dataAddr      string
	controlAddr   string
	wg            sync.WaitGroup
	errc          chan error
	shutdownOnce  sync.Once
	shutdownErr   error
}

// Listen binds dataAddr and controlAddr (":0" ports allowed) and starts
// serving p on them. Stop it with Shutdown.
func Listen(p *Proxy, dataAddr, controlAddr string, errorLog *log.Logger) (*Server, error) {
	dl, err := net.Listen("tcp", dataAddr)
	if err != nil {
		return nil, &ListenError{Plane: "data", Err: err}
	}
	cl, err := net.Listen("tcp", controlAddr)
	if err != nil {
		dl.Close()
		return nil, &ListenError{Plane: "control", Err: err}
	}
	var data planeServer
	if p.h1 != nil && rawSupported {
		data = newRawServer(p, errorLog) // see rawserver.go
	} else {
		// No write timeout on the data plane: delays and hangs are the point.
		data = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: 2 * time.Minute, ErrorLog: errorLog}
	}
	s := &Server{
		proxy:       p,
		dataAddr:    dl.Addr().String(),
		controlAddr: cl.Addr().String(),
		errc:        make(chan error, 2),
		data:        data,
		// The control plane's calls are bounded.
		control: &http.Server{Handler: p.ControlHandler(), ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			IdleTimeout: time.Minute, ErrorLog: errorLog},
	}
	s.serve(s.data, dl)
	s.serve(s.control, cl)
	return s, nil
}

func (s *Server) serve(hs planeServer, l net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			s.errc <- err
		}
	}()
}

// Addr is the bound data-plane address, host:port.
func (s *Server) Addr() string { return s.dataAddr }

// ControlAddr is the bound control-plane address, host:port.
func (s *Server) ControlAddr() string { return s.controlAddr }

// Err delivers an error if a listener fails while serving.
func (s *Server) Err() <-chan error { return s.errc }

// Shutdown stops the server within ctx's deadline: it closes the Proxy
// (hanging and delayed requests abort at once), stops accepting, lets
// forwarded requests finish until ctx is done and then closes every
// connection. It returns when the serving goroutines have ended; the
// error is ctx's if connections had to be cut. Idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.proxy.Close()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, hs := range []planeServer{s.data, s.control} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := hs.Shutdown(ctx); err != nil {
					errs[i] = err
					_ = hs.Close()
				}
			}()
		}
		wg.Wait()
		s.wg.Wait()
		s.proxy.closeIdleConnections()
		s.shutdownErr = errors.Join(errs...)
	})
	return s.shutdownErr
}
