// Package connserver serves a connection-level data plane of the fault
// proxy (the TCP plane, the PostgreSQL plane) and its control API on two
// listeners: an accept loop that hands each connection to the plane, and
// a shutdown that closes the plane and every connection without waiting
// for idle ones.
package connserver

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bulkheadlab/bulkheadlab/faultproxy"
)

// Plane is what a Server needs of the proxy it serves.
type Plane struct {
	// Name prefixes the server's log lines ("tcpproxy").
	Name string
	// Control is the control API's handler.
	Control http.Handler
	// Serve serves one accepted connection, to its end.
	Serve func(*net.TCPConn)
	// Done is closed when the proxy is closed.
	Done <-chan struct{}
	// Close closes the proxy (waits in faults end at once) and then every
	// connection; a connection that registers later sees it closed.
	Close func()
	// Logf logs an accept error the loop retries.
	Logf func(format string, args ...any)
	// MaxConns bounds the connections served at once, so that they and
	// their upstream connections leave file descriptors to the control
	// API: at the bound the accept loop waits for one to end (new clients
	// wait in the listener's queue). 0 means faultproxy.ConnBudget(), as
	// the HTTP plane's; negative means no bound.
	MaxConns int
}

// Server serves a Plane's data connections and its control API on two
// listeners. Safe for concurrent use.
type Server struct {
	plane        Plane
	data         net.Listener
	control      *http.Server
	controlAddr  string
	conns        sync.WaitGroup // Serve goroutines, added to by the accept loop only
	room         chan struct{}  // a token per connection served; nil: no bound
	closing      chan struct{}  // closed when Shutdown begins
	accepting    chan struct{}  // closed when the accept loop has ended
	wg           sync.WaitGroup // control server
	errc         chan error
	shutdownOnce sync.Once
	shutdownErr  error
}

// Listen binds dataAddr and controlAddr (":0" ports allowed) and starts
// serving p on them; a bind error is a *faultproxy.ListenError naming the
// plane. Stop it with Shutdown.
func Listen(p Plane, dataAddr, controlAddr string, errorLog *log.Logger) (*Server, error) {
	dl, err := net.Listen("tcp", dataAddr)
	if err != nil {
		return nil, &faultproxy.ListenError{Plane: "data", Err: err}
	}
	cl, err := net.Listen("tcp", controlAddr)
	if err != nil {
		dl.Close()
		return nil, &faultproxy.ListenError{Plane: "control", Err: err}
	}
	max := p.MaxConns
	if max == 0 {
		max = faultproxy.ConnBudget()
	}
	s := &Server{plane: p, data: dl, controlAddr: cl.Addr().String(), errc: make(chan error, 2), accepting: make(chan struct{}), closing: make(chan struct{}),
		control: &http.Server{Handler: p.Control, ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
			IdleTimeout: time.Minute, ErrorLog: errorLog}}
	if max > 0 {
		s.room = make(chan struct{}, max)
	}
	s.wg.Go(func() {
		if err := s.control.Serve(cl); !errors.Is(err, http.ErrServerClosed) {
			s.errc <- err
		}
	})
	go func() {
		defer close(s.accepting)
		if err := s.accept(dl); err != nil {
			s.errc <- err
		}
	}()
	return s, nil
}

// accept serves connections until l is closed, at most MaxConns at once;
// temporary errors (out of file descriptors) back off up to a second, as
// net/http does.
func (s *Server) accept(l net.Listener) error {
	var backoff time.Duration
	for {
		if s.room != nil {
			select { // a place, before the accept: a client beyond waits in the queue
			case s.room <- struct{}{}:
			case <-s.plane.Done:
				return nil
			case <-s.closing:
				return nil
			}
		}
		nc, err := l.Accept()
		if err != nil {
			s.free()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.plane.Logf("%s: accept: %v; retrying in %v", s.plane.Name, err, backoff)
				select {
				case <-time.After(backoff):
				case <-s.plane.Done:
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		s.conns.Go(func() {
			defer s.free()
			s.plane.Serve(nc.(*net.TCPConn))
		})
	}
}

// free gives back a connection's place.
func (s *Server) free() {
	if s.room != nil {
		<-s.room
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// Addr is the bound data-plane address, host:port.
func (s *Server) Addr() string { return s.data.Addr().String() }

// ControlAddr is the bound control-plane address, host:port.
func (s *Server) ControlAddr() string { return s.controlAddr }

// Err delivers an error if a listener fails while serving.
func (s *Server) Err() <-chan error { return s.errc }

// Shutdown stops accepting, closes the plane (waits in a fault end at
// once) and every connection: a client's pool keeps idle connections for
// ever, and a relay cannot tell them from ones waiting for an answer, so
// it does not wait for them. The control server is shut down within ctx.
// It returns when every goroutine of the server has ended. Idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		close(s.closing)
		_ = s.data.Close()
		<-s.accepting // no conns.Go after this
		s.plane.Close()
		s.conns.Wait()
		if err := s.control.Shutdown(ctx); err != nil {
			s.shutdownErr = err
			_ = s.control.Close()
		}
		s.wg.Wait()
	})
	return s.shutdownErr
}
