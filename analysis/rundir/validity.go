package rundir

import (
	"fmt"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// checkValidity checks the validity records of a run: meta.json's verdicts
// and earlier attempts, and phases.json's records. Each record must be
// one of the contract's (rundata.Broken.Check) and of the endpoint's
// phase it is filed under; an INVALID verdict must say which rules it
// broke (an older bulkheadlab wrote them in words, which nothing reads
// back) and a valid one none. bad is told each finding, naming the file
// and the field.
func checkValidity(m rundata.RunMeta, phases []rundata.PhaseStats, bad func(file string, line int, format string, args ...any)) {
	// records checks bs, filed at prefix under ep's phase ("" for any).
	records := func(file, prefix string, bs []rundata.Broken, ep, phase string) {
		for j, b := range bs {
			at := fmt.Sprintf("%sbroken[%d]", prefix, j)
			if err := b.Check(); err != nil {
				bad(file, 0, "%s.%v", at, err)
			} else if ep != "" && (b.Endpoint != ep || b.Phase != phase) {
				bad(file, 0, "%s: a record of %s in the verdict of %s/%s", at, b.Where(), ep, phase)
			}
		}
	}
	for i, v := range m.Validity {
		field := fmt.Sprintf("validity[%d]", i)
		switch {
		case !v.Valid && len(v.Broken) == 0:
			bad(rundata.MetaFile, 0, "%s (%s/%s): INVALID without a record of the rules it broke (reasons in words, of an older bulkheadlab, are not read)",
				field, v.Endpoint, v.Phase)
		case v.Valid && len(v.Broken) > 0:
			bad(rundata.MetaFile, 0, "%s (%s/%s): valid with %d rules broken", field, v.Endpoint, v.Phase, len(v.Broken))
		}
		records(rundata.MetaFile, field+".", v.Broken, v.Endpoint, v.Phase)
	}
	for i, a := range m.Attempts {
		field := fmt.Sprintf("attempts[%d]", i)
		if len(a.Broken) == 0 {
			bad(rundata.MetaFile, 0, "%s: an INVALID attempt without a record of the rules it broke (reasons in words, of an older bulkheadlab, are not read)", field)
		}
		records(rundata.MetaFile, field+".", a.Broken, "", "")
	}
	for i, p := range phases {
		records(rundata.PhasesFile, fmt.Sprintf("record %d (%s/%s): ", i, p.Endpoint, p.Phase), p.Broken, p.Endpoint, p.Phase)
	}
}
