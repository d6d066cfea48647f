package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// inWords says what err means for someone setting an experiment up, followed
// by the error itself: "the program ./svc does not exist (fork/exec ./svc:
// no such file or directory)". An error it does not know is its own text.
func inWords(err error) string {
	raw, log := err.Error(), ""
	var se *StartError
	if errors.As(err, &se) {
		// The launcher's "child process did not start: NAME: " says nothing
		// the SetupError does not.
		raw = strings.TrimPrefix(se.Err.Error(), ErrChildStart.Error()+": ")
		raw = strings.TrimPrefix(raw, se.Component+": ")
		if st, err := os.Stat(se.Log); err == nil && st.Size() > 0 {
			log = "; log: " + se.Log
		}
	}
	if w := setupWords(err); w != "" {
		return w + " (" + raw + ")" + log
	}
	return raw + log
}

// setupWords is the plain sentence for the errors a broken setup gives,
// "" for others.
func setupWords(err error) string {
	var ee *exec.Error
	var pe *fs.PathError
	var dns *net.DNSError
	switch {
	case errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound):
		return fmt.Sprintf("the program %s is not found in PATH", ee.Name)
	case errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist):
		if pe.Op == "fork/exec" {
			return fmt.Sprintf("the program %s does not exist", pe.Path)
		}
		return fmt.Sprintf("%s does not exist", pe.Path)
	case errors.As(err, &pe) && errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s cannot be run (permission denied)", pe.Path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens there (connection refused)"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed without an answer"
	case errors.As(err, &dns):
		return fmt.Sprintf("the host %s does not resolve", dns.Name)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "the address cannot be reached from this machine"
	}
	return ""
}

// isTimeout reports whether err is a client's timeout (no answer in time).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
