package pgproxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bulkheadlab/bulkheadlab/internal/pgserver"
	"github.com/bulkheadlab/bulkheadlab/internal/pgtest"
)

// libpqTool is the path of one of PostgreSQL's client programs (libpq's
// clients: pgbench, psql), skipping the test without it.
func libpqTool(t *testing.T, name string) string {
	t.Helper()
	dir, err := pgserver.BinDir()
	if err == nil {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s is not installed (Debian: postgresql)", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// runTool runs a client program with a bound of 60 s and returns its
// output.
func runTool(t *testing.T, path string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	return string(out), err
}

// pgbenchLatency is the "latency average" pgbench reports, in ms.
var pgbenchLatency = regexp.MustCompile(`latency average = ([0-9.]+) ms`)

// TestLibpqClients: the proxy with another driver than pgx, libpq (C),
// through PostgreSQL's own client programs: pgbench in each of its query
// protocols (simple; extended, a Parse per query; prepared, a Parse once
// then Bind and Execute of the named statement) gets a latency fault
// matched on its statement's text, measured by pgbench itself, and a
// statement that does not match passes unslowed; psql gets an error
// fault's SQLSTATE and message as the server's own error.
func TestLibpqClients(t *testing.T) {
	pgbench, psql := libpqTool(t, "pgbench"), libpqTool(t, "psql")
	const delay = 50 * time.Millisecond
	_, e := pgEnv(t, Config{}, Fault{Type: TypeLatency, Percent: 100, Latency: delay, Match: "analytics"})
	dsn := pgtest.DSNAt(e.srv.Addr())
	dir := t.TempDir()
	scripts := map[string]string{"match": "SELECT 1 AS analytics;\n", "other": "SELECT 2 AS lookup;\n"}
	for name, sql := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name+".sql"), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"simple", "extended", "prepared"} {
		for name := range scripts {
			out, err := runTool(t, pgbench, "-n", "-c", "2", "-t", "10", "-M", mode, "-f", filepath.Join(dir, name+".sql"), dsn)
			m := pgbenchLatency.FindStringSubmatch(out)
			if err != nil || m == nil {
				t.Errorf("pgbench -M %s, %s: %v\n%s", mode, scripts[name], err, out)
				continue
			}
			ms, _ := strconv.ParseFloat(m[1], 64)
			got := time.Duration(ms * float64(time.Millisecond))
			t.Logf("pgbench -M %s, %s: latency average %v", mode, name, got)
			switch name {
			case "match":
				// Never early; the bound above is generous for a busy machine
				// (the precision is TestLatencyPerQuery's).
				if got < delay || got > 2*delay {
					t.Errorf("pgbench -M %s, %q (matches): latency average %v, want %v and at most %v more", mode, scripts[name], got, delay, delay)
				}
			default:
				if got >= delay/2 {
					t.Errorf("pgbench -M %s, %q (does not match): latency average %v, want well under %v", mode, scripts[name], got, delay)
				}
			}
		}
	}
	if err := e.p.SetFaults([]Fault{{Type: TypeError, Percent: 100, Code: "53300", Message: "sorry, too many clients already"}}); err != nil {
		t.Fatal(err)
	}
	out, err := runTool(t, psql, "-X", "-v", "VERBOSITY=verbose", "-v", "ON_ERROR_STOP=1", "-c", "SELECT 1", dsn)
	if err == nil || !strings.Contains(out, "53300") || !strings.Contains(out, "sorry, too many clients already") {
		t.Errorf("psql under an error fault: %v, %q; want a failure naming SQLSTATE 53300 and the message", err, out)
	}
}
