// Package pgserver starts a real PostgreSQL server of Debian's postgresql
// package for an experiment or a test: initialised into a folder of its
// own, listening on one 127.0.0.1 port only, with trust authentication for
// one user and no durability (fsync off), stopped with an immediate
// shutdown and its folder removed.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// User is the superuser the server trusts, Database the database it serves.
const (
	User     = "bulkheadlab"
	Database = "postgres"
)

// ErrNotInstalled is returned by Start when PostgreSQL's server programs
// are not found; the error names the Debian package.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (Debian: apt-get install postgresql)")

// ErrSetup is wrapped by Start's error when Options.Setup failed.
var ErrSetup = errors.New("setup SQL failed")

// Options configure Start. The zero value is a plain-text server on a free
// port.
type Options struct {
	// Port is the port to listen on, 0 for a free one.
	Port int
	// TLS makes the server serve TLS too, with a self-signed certificate
	// for 127.0.0.1 made at the start.
	TLS bool
	// MaxConnections is the server's max_connections (0: 100).
	MaxConnections int
	// Log, if set, gets the server's own output.
	Log *os.File
	// Setup, if set, is SQL Start runs once the server accepts
	// connections (tables, rows), within SetupTimeout; if it fails, the
	// server is stopped and Start returns its error.
	Setup string
}

// SetupTimeout bounds Options.Setup.
const SetupTimeout = 2 * time.Minute

// Server is a running PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is the server's host:port, on 127.0.0.1.
	Addr string
	// PID is the postmaster's process id.
	PID int

	dir      string
	stopOnce sync.Once
	stop     func()
}

// DSN is a connection URL for the server, without TLS.
func (s *Server) DSN() string { return DSNAt(s.Addr) }

// DSNAt is the DSN of a server (or a proxy in front of one) at addr,
// host:port, with this package's user and database and without TLS.
func DSNAt(addr string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: addr, Path: "/" + Database,
		RawQuery: "sslmode=disable&connect_timeout=10"}
	return u.String()
}

// Exec runs sql (one or more statements, the simple query protocol) on a
// new connection, within ctx.
func (s *Server) Exec(ctx context.Context, sql string) error {
	c, err := pgconn.Connect(ctx, s.DSN())
	if err != nil {
		return fmt.Errorf("pgserver: connect: %w", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	return nil
}

// Stop shuts the server down at once (every backend with it) and removes
// its folder. Idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.stop()
		_ = os.RemoveAll(s.dir)
	})
}

// Start initialises a server into a new folder of os.TempDir() and starts
// it, returning once it accepts connections. The binaries are looked up
// on PATH, then in /usr/lib/postgresql/*/bin (the newest); without them
// the error wraps ErrNotInstalled. As PostgreSQL refuses to run as root, a
// root process runs it as the postgres user (which the Debian package
// creates). The postmaster gets SIGQUIT if this process dies first.
func Start(o Options) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bulkheadlab-pg-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	if o.TLS {
		if err := writeCert(dir, cred); err != nil {
			return fail(fmt.Errorf("pgserver: %w", err))
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgserver: initdb: %v\n%s", err, out))
	}
	attempts := 3
	if o.Port != 0 {
		attempts = 1
	}
	var last error
	for range attempts {
		s, err := launch(bin, dir, data, cred, o)
		if err != nil {
			last = err
			continue
		}
		if o.Setup != "" {
			ctx, cancel := context.WithTimeout(context.Background(), SetupTimeout)
			err := s.Exec(ctx, o.Setup)
			cancel()
			if err != nil {
				s.Stop()
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
		}
		return s, nil
	}
	return fail(last)
}

// launch starts the postmaster and waits until it accepts connections: the
// server, or an error if it exited first (its port taken in the meantime)
// or did not answer within 30 s.
func launch(bin, dir, data string, cred *syscall.Credential, o Options) (*Server, error) {
	port := o.Port
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close() // a moment's race for the port; lost, the next attempt takes another
	}
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = 100
	}
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=" + strconv.Itoa(maxConns), "-c", "shared_buffers=16MB", "-c", "log_min_messages=warning"}
	if o.TLS {
		args = append(args, "-c", "ssl=on", "-c", "ssl_cert_file="+filepath.Join(dir, "server.crt"), "-c", "ssl_key_file="+filepath.Join(dir, "server.key"))
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
	}
	// The postmaster ends its backends on SIGQUIT (an immediate shutdown);
	// it gets one as well if this process dies first. A backend whose
	// postmaster was killed notices and exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgserver: starting postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), PID: cmd.Process.Pid, dir: dir, stop: stop}
	if ready(s, exited) {
		return s, nil
	}
	stop()
	msg := ""
	if b, err := os.ReadFile(logPath); err == nil {
		msg = "\n" + string(b)
	}
	return nil, fmt.Errorf("pgserver: postgres on port %d did not start%s", port, msg)
}

// ready connects to s until it answers (true), or the server exits or 30 s
// pass (false).
func ready(s *Server, exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgconn.Connect(ctx, s.DSN())
		if err == nil {
			err = c.Exec(ctx, "SELECT 1").Close()
			_ = c.Close(ctx)
		}
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// BinDir is the folder of PostgreSQL's programs (initdb, postgres, and the
// client programs installed beside them, psql and pgbench): PATH, then
// Debian's /usr/lib/postgresql/VERSION/bin, the highest version.
func BinDir() (string, error) { return binDir() }

// binDir finds the folder of initdb and postgres: PATH, then Debian's
// /usr/lib/postgresql/VERSION/bin, the highest version.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb on PATH nor in /usr/lib/postgresql/*/bin")
}

// version is the major version of a /usr/lib/postgresql/VERSION/bin path.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential is nil when this process may run PostgreSQL itself, and the
// postgres user's when it is root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres user to run as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user: uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
