// Package pgtest starts a real PostgreSQL server for tests: Debian's
// postgresql, initialised into a temporary folder, listening on a free
// 127.0.0.1 port only, with trust authentication for one user, TLS with a
// self-signed certificate (for clients that ask: sslmode=require) and no
// durability (fsync off), stopped when the test ends.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// User is the superuser the server trusts, Database the database it serves.
const (
	User     = "pgtest"
	Database = "postgres"
)

// Server is a running PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is the server's host:port, on 127.0.0.1.
	Addr string
	pid  int // the postmaster's
}

// DSN is a connection URL for the server, without TLS (sslmode=disable;
// the server accepts TLS too).
func (s *Server) DSN() string { return DSNAt(s.Addr) }

// DSNAt is the DSN of a server (or a proxy in front of one) at addr,
// host:port, with pgtest's user and database and without TLS.
func DSNAt(addr string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: addr, Path: "/" + Database,
		RawQuery: "sslmode=disable&connect_timeout=10"}
	return u.String()
}

// Exec runs sql (one or more statements, the simple query protocol) on a
// new connection and fails t on an error. It bounds the whole at 30 s.
func (s *Server) Exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Start starts PostgreSQL on a free 127.0.0.1 port and returns it once it
// accepts connections; it is stopped (immediate shutdown, every backend
// with it) and its folder removed when the test ends. The binaries are
// looked up on PATH, then in /usr/lib/postgresql/*/bin (the newest). As
// PostgreSQL refuses to run as root, a root test runs it as the postgres
// user (which the Debian package creates), in a folder of os.TempDir()
// that user can reach. Without PostgreSQL the test is skipped, except when
// the environment sets CI, where it fails: a skip there would hide that
// the server is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is not installed (%v); CI must install it: apt-get install postgresql", err)
		}
		t.Skipf("PostgreSQL is not installed (%v; Debian: apt-get install postgresql); skipping the PostgreSQL test", err)
	}
	cred, err := credential()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeCert(dir, cred); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	for attempt := 1; ; attempt++ {
		if s := launch(t, bin, dir, data, cred); s != nil {
			return s
		}
		if attempt == 3 {
			t.Fatal("pgtest: PostgreSQL did not start on three free ports")
		}
	}
}

// launch starts the postmaster on a free port and waits until it accepts
// connections: the server, or nil if it exited first (its port taken in
// the meantime) or did not answer within 30 s.
func launch(t testing.TB, bin, dir, data string, cred *syscall.Credential) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // a moment's race for the port; lost, the next attempt takes another
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "ssl=on", "-c", "ssl_cert_file="+filepath.Join(dir, "server.crt"), "-c", "ssl_key_file="+filepath.Join(dir, "server.key"),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=60", "-c", "shared_buffers=16MB", "-c", "log_min_messages=warning")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The postmaster ends its backends on SIGQUIT (an immediate shutdown);
	// it gets one as well if this process dies first. A backend whose
	// postmaster was killed notices and exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pgtest: starting postgres: %v", err)
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
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), pid: cmd.Process.Pid}
	if ready(s, exited) {
		t.Cleanup(stop)
		return s
	}
	stop()
	if b, err := os.ReadFile(logPath); err == nil {
		t.Logf("pgtest: postgres on port %d did not start:\n%s", port, b)
	}
	return nil
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
