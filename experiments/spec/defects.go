package spec

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/service"
)

// defectsPart is a spec as its defects family sees it: the service's
// deliberate defects.
type defectsPart struct{ *Spec }

// defectsOf is the built-in service's test defects in mode m: the mode's
// defects where it sets some, else service.defects.
func (s defectsPart) defectsOf(m *Mode) []service.Defect {
	names := s.Service.Defects
	if m != nil && len(m.Defects) > 0 {
		names = m.Defects
	}
	if len(names) == 0 {
		return nil
	}
	out := make([]service.Defect, len(names))
	for i, n := range names {
		out[i] = service.Defect(n)
	}
	return out
}

// validateDefects checks service.defects and every mode's defects: each a
// defect's name, given once, and only for the built-in service.
func (s defectsPart) validateDefects(p *problems) {
	validDefects(p, "service.defects", s.Service.Defects)
	if s.External != nil && len(s.Service.Defects) > 0 {
		p.add("service.defects", "are test defects of the built-in service; your own service's are its own")
	}
	for i, m := range s.Modes {
		path := fmt.Sprintf("modes[%d].defects", i)
		validDefects(p, path, m.Defects)
		switch {
		case s.External != nil && len(m.Defects) > 0:
			p.add(path, "are test defects of the built-in service; your own service's are its own")
		case s.set(path) && len(m.Defects) == 0:
			p.add(path, "an empty list does not turn service.defects off in this mode; leave service.defects out and give each mode its own")
		}
	}
}

// validDefects checks one list of defect names at path.
func validDefects(p *problems, path string, names []string) {
	seen := map[string]int{}
	for i, n := range names {
		at := fmt.Sprintf("%s[%d]", path, i)
		j, dup := seen[n]
		switch _, err := service.ParseDefect(n); {
		case err != nil:
			p.add(at, "%v", err)
		case dup:
			p.add(at, "%s is given twice (%s[%d])", n, path, j)
		default:
			seen[n] = i
		}
	}
}
