package spec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalidSpec matches (errors.Is) every error of Load, Parse and
// Validate that is the spec's fault rather than an I/O error.
var ErrInvalidSpec = errors.New("invalid experiment spec")

// FieldError is one problem in a spec, located by file, line and field
// path, e.g. `slow.yaml:12: service.pool_size: must be ≥ 2 in bulkhead mode`.
type FieldError struct {
	File string
	Line int    // 0 when unknown
	Path string // dotted field path, e.g. "conditions[1].faults[0].status"
	Msg  string
}

// Error implements error.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes every FieldError match ErrInvalidSpec.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidSpec }

// SpecError collects the FieldErrors of one spec, sorted by line.
type SpecError struct {
	Errs []*FieldError
}

// Error lists every problem, one per line.
func (e *SpecError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "\n")
}

// Is makes a SpecError match ErrInvalidSpec.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// Unwrap returns the field errors.
func (e *SpecError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		out[i] = fe
	}
	return out
}

// problems accumulates FieldErrors for one file.
type problems struct {
	file  string
	lines map[string]int
	errs  []*FieldError
}

// add records a problem at path, locating it by the nearest recorded line
// of the path or of one of its parents.
func (p *problems) add(path, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{File: p.file, Line: p.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// addAt records a problem at a known line.
func (p *problems) addAt(line int, path, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) lineOf(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return p.lines[""]
}

// err returns nil or a *SpecError.
func (p *problems) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	errs := append([]*FieldError(nil), p.errs...)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return &SpecError{Errs: errs}
}
