package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	// The ecosystem's PostgreSQL driver, through database/sql: its pool
	// (SetMaxOpenConns, DBStats) is the one a Go service's database calls
	// wait in.
	_ "github.com/jackc/pgx/v5/stdlib"
)

// A database dependency is an endpoint whose Query is set: its URL is a
// PostgreSQL connection URL (postgres://user@host:port/db?...), and each
// call runs Query there, reading every row, instead of a GET. Its calls
// hold a slot of its connection pool (its own, or one shared with the
// other dependencies: ConnsLayout) as an HTTP dependency's do, and the
// database/sql pool behind it keeps as many connections as that pool's
// limit, so that the service's pool, whose wait is measured, is what a
// call waits for: seed-004's "connection-pool wait time alongside query
// time".

// dbDriver is the database/sql driver name of the pgx stdlib package.
const dbDriver = "pgx"

// ValidateDatabaseURL checks that s is a PostgreSQL connection URL with a
// host: postgres:// or postgresql://.
func ValidateDatabaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return errors.New("URL is required")
	case err != nil:
		return fmt.Errorf("malformed URL %q: %v", s, err)
	case u.Scheme != "postgres" && u.Scheme != "postgresql":
		return fmt.Errorf("URL %q of an endpoint with a query must start with postgres:// or postgresql://", redactURL(u))
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("URL %q has no host", redactURL(u))
	}
	return nil
}

// redactURL is u without its password, for messages.
func redactURL(u *url.URL) string { return u.Redacted() }

// openDB opens the database of a dependency whose calls draw from a pool
// of limit: database/sql keeps at most limit connections open and idle.
// It connects lazily, on the first call.
func openDB(dsn string, limit int) (*sql.DB, error) {
	db, err := sql.Open(dbDriver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(limit)
	db.SetMaxIdleConns(limit)
	db.SetConnMaxIdleTime(90 * time.Second)
	return db, nil
}

// doQuery runs the dependency's query under ctx (which carries T) and
// reads every row; the answer is a small summary of what came back. A
// result of more than maxBody bytes is an error (ErrBodyTooLarge), as for
// an HTTP body.
func (d *dependency) doQuery(ctx context.Context, maxBody int64) callResult {
	if err := d.acquireConn(ctx); err != nil {
		return callResult{err: err}
	}
	defer d.releaseConn(time.Now())
	rows, err := d.db.QueryContext(ctx, d.query)
	if err != nil {
		return callResult{err: fmt.Errorf("dependency %s: query: %w", d.name, err)}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return callResult{err: fmt.Errorf("dependency %s: query: %w", d.name, err)}
	}
	vals := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	var n, size int64
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return callResult{err: fmt.Errorf("dependency %s: reading row %d: %w", d.name, n+1, err)}
		}
		n++
		for _, v := range vals {
			size += int64(len(v))
		}
		if size > maxBody {
			return callResult{err: fmt.Errorf("dependency %s: %w (%d bytes)", d.name, ErrBodyTooLarge, maxBody)}
		}
	}
	if err := rows.Err(); err != nil {
		return callResult{err: fmt.Errorf("dependency %s: query: %w", d.name, err)}
	}
	body := "rows " + strconv.FormatInt(n, 10) + ", " + strconv.FormatInt(size, 10) + " bytes\n"
	return callResult{outcome: outcomeOK, body: []byte(body), contentType: "text/plain; charset=utf-8"}
}
