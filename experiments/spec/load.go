package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// MaxSpecSize is the largest spec file Parse accepts.
const MaxSpecSize = 1 << 20

// ErrNotAFile is wrapped by Load for a path that is not a regular file (a
// directory, a device such as /dev/zero, a named pipe).
var ErrNotAFile = errors.New("not a regular file")

// Load reads the spec file at path; see Parse. Only a regular file is read,
// and at most MaxSpecSize+1 bytes of it, so that a device or a pipe can
// neither exhaust memory nor block. Errors name the file by its base name.
func Load(path string) (*Spec, error) {
	data, err := readSpecFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	s, err := Parse(filepath.Base(path), data)
	if err != nil {
		return nil, err
	}
	if dir, err := filepath.Abs(filepath.Dir(path)); err == nil {
		s.resolveStartDirs(dir)
	}
	return s, nil
}

// resolveStartDirs makes the working directories of an external service's
// start commands absolute, relative to dir (the spec file's folder): a
// command is started there unless it names another, so `start: [./mysvc]`
// means the mysvc beside the spec, and the resolved spec written into a
// results folder still finds it on --resume.
func (s *Spec) resolveStartDirs(dir string) {
	x := s.External
	if x == nil {
		return
	}
	abs := func(d string) string {
		if d == "" || filepath.IsAbs(d) {
			return d
		}
		return filepath.Join(dir, d)
	}
	if x.Dir == "" {
		x.Dir = dir
	}
	x.Dir = abs(x.Dir)
	for i := range s.Modes {
		if m := s.Modes[i].External; m != nil {
			m.Dir = abs(m.Dir)
		}
	}
}

func readSpecFile(path string) ([]byte, error) {
	st, err := os.Stat(path) // does not open: a pipe cannot block it
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotAFile, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxSpecSize+1))
}

// Parse decodes, completes and validates a spec. file names the spec in
// error messages. The returned spec is resolved: every default is filled
// in, built-in conditions are spelled out and every duration is absolute.
// On a spec problem the error is a *SpecError (errors.Is ErrInvalidSpec)
// listing every problem as file:line: field.path: message.
func Parse(file string, data []byte) (*Spec, error) {
	p := &problems{file: file, lines: map[string]int{}}
	if len(data) > MaxSpecSize {
		p.addAt(0, "", "file larger than %d bytes", MaxSpecSize)
		return nil, p.err()
	}
	s, doc := decodeSpec(p, data)
	if err := p.err(); err != nil {
		return nil, err
	}
	if len(s.Sweep) > 0 {
		return parseSwept(file, doc, s.Sweep, p)
	}
	s, err := finishParse(file, s, p)
	if err != nil {
		return nil, err
	}
	matrixProblems(s, p)
	return s, p.err()
}

// parseNode parses one document node (a sweep point: no sweep of its own).
func parseNode(file string, doc *yaml.Node) (*Spec, error) {
	p := &problems{file: file, lines: map[string]int{}}
	s := &Spec{}
	decodeNode(p, doc, s)
	if err := p.err(); err != nil {
		return nil, err
	}
	return finishParse(file, s, p)
}

// finishParse fills defaults into a decoded spec, resolves and validates it.
func finishParse(file string, s *Spec, p *problems) (*Spec, error) {
	s.file, s.lines = file, p.lines
	if s.Service.Timeout.Rel > 0 {
		p.add("service.timeout", "must be absolute (e.g. 250ms): it is T itself")
		return nil, p.err()
	}
	s.applyDefaults()
	s.resolveDurations()
	s.expandConditions()
	s.validate(p)
	if err := p.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks a resolved spec again (for example after a caller changed
// Repeats) and returns a *SpecError or nil.
func (s *Spec) Validate() error {
	p := &problems{file: s.file, lines: s.lines}
	if p.lines == nil {
		p.lines = map[string]int{}
	}
	s.validate(p)
	return p.err()
}

// Marshal returns the resolved spec as YAML; Parse of the result gives back
// an equal spec.
func (s *Spec) Marshal() ([]byte, error) {
	if info := s.sweep; info != nil {
		// The base and its sweep: parsing them expands the same matrix.
		b := *info.base
		b.Sweep, b.Repeats, b.Description = s.Sweep, s.Repeats, s.Description
		return b.Marshal()
	}
	var b bytes.Buffer
	if s.Description != "" {
		fmt.Fprintf(&b, "# %s (resolved)\n", s.Name)
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("spec: marshal spec: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
