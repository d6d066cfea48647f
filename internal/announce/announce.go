// Package announce is the handshake between a component process (serve, dep,
// proxy) and its parent: the component prints one JSON line with its bound
// addresses as the first line of stdout, and the parent reads it.
//
// The line looks like
//
//	{"component":"proxy","addr":"127.0.0.1:40123","control":"127.0.0.1:40124","pid":4242}
package announce

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Announcement is what a component tells its parent once it listens.
type Announcement struct {
	// Component is the subcommand name: "service", "dep" or "proxy".
	Component string `json:"component"`
	// Name distinguishes instances of one component, e.g. "A" or "B".
	Name string `json:"name,omitempty"`
	// Addr is the data-plane host:port the component is bound to.
	Addr string `json:"addr"`
	// Control is the control-plane host:port, empty if there is none.
	Control string `json:"control,omitempty"`
	// PID is the component's process id.
	PID int `json:"pid"`
}

// ErrNoAnnouncement is returned by Read when the stream ends, or its first
// line is not an announcement.
var ErrNoAnnouncement = errors.New("announce: no announcement line")

// Write prints a as a single JSON line to w. PID is filled in when zero.
func Write(w io.Writer, a Announcement) error {
	if a.PID == 0 {
		a.PID = os.Getpid()
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Read reads the first line of r and decodes it as an Announcement. It reads
// byte by byte up to the newline so that nothing after the line is consumed
// from r; the caller may keep reading r (for example to copy it to a log).
func Read(r io.Reader) (Announcement, error) {
	br := bufio.NewReaderSize(oneByteReader{r}, 16)
	line, err := br.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return Announcement{}, fmt.Errorf("%w: %v", ErrNoAnnouncement, err)
	}
	var a Announcement
	if err := json.Unmarshal(line, &a); err != nil || a.Addr == "" {
		return Announcement{}, fmt.Errorf("%w: got %q", ErrNoAnnouncement, truncate(line, 200))
	}
	return a, nil
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
