// Package analysis reads the run data written by the runner, computes the
// statistics and verdicts on the hypothesis (docs/design.md), and renders
// PNG, Markdown, HTML, JUnit and JSON reports.
//
// Its four packages, which callers import directly, run their imports one
// way:
//
//	rundir   reading a results folder: the experiment, its runs, the
//	         damage checks, and each run's series
//	measure  one run's numbers: the run summary, the exhausted resource,
//	         inferred limits, the noise floor, Little's law, each claim
//	         family's run statistics, and the bootstrap
//	verdict  the verdicts across runs: cells, the decision builder, P1–P4
//	         and every claim family, repeats, notices, --check
//	render   summary.json, report.md, index.html, JUnit and the figures,
//	         and an audit's map (audit.json, audit.md, audit.html, its
//	         heatmap); the only package that draws
//
// render imports verdict, measure and rundir; verdict imports measure and
// rundir; measure imports rundir. Below them all, render/words is a leaf
// (it imports internal/rundata alone) that says the run data's records in
// English (a broken validity rule's sentence, name and numbers) and holds
// the number formats: any of them may import it, and so may the runner's
// progress, which says a run's broken rules as the report does. None of
// them imports a component of the system under test: what crosses a
// process lives in internal/rundata.
package analysis
