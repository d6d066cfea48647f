package pgproxy

import "strings"

// TypeError is the error fault: the proxy answers the query itself with an
// ErrorResponse of SQLSTATE Code and Message, without the server seeing
// it. The first error or hang that fired answers.
const TypeError = "error"

// DefaultCode and DefaultMessage are an error fault's SQLSTATE and message
// when it names none: the server's own for a cancelled statement.
const (
	DefaultCode    = "57014"
	DefaultMessage = "canceling statement due to user request"
)

func init() {
	register(TypeError, kind{
		fields: []string{"code", "message"},
		normalized: func(f Fault) Fault {
			if f.Code == "" {
				f.Code = DefaultCode
			}
			if f.Message == "" {
				f.Message = DefaultMessage
			}
			return f
		},
		validate: func(f Fault, field string) error {
			if !validCode(f.Code) {
				return fieldErr(field+".code", "want a SQLSTATE of 5 digits or capital letters (57014), got %q", f.Code)
			}
			if len(f.Message) > MaxMessageLen || strings.IndexByte(f.Message, 0) >= 0 {
				return fieldErr(field+".message", "want at most %d bytes and no NUL byte", MaxMessageLen)
			}
			return nil
		},
		act: func(f *Fault, _ *qrand, d *decision) {
			if !d.synthetic() {
				d.err = f
			}
		},
	})
}

// validCode reports whether c is a SQLSTATE: five of 0-9 and A-Z.
func validCode(c string) bool {
	if len(c) != 5 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !('0' <= c[i] && c[i] <= '9' || 'A' <= c[i] && c[i] <= 'Z') {
			return false
		}
	}
	return true
}
