package render

import (
	"runtime"

	"github.com/bulkheadlab/bulkheadlab/analysis/measure"
	"github.com/bulkheadlab/bulkheadlab/analysis/rundir"
	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"github.com/bulkheadlab/bulkheadlab/internal/atomicfile"
	"golang.org/x/sync/errgroup"

	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Options tune WriteReport. The zero value writes everything into the
// results folder with the spec's expectations.
type Options struct {
	// OutDir is where the report is written; empty means the results folder.
	OutDir string
	// Expectations, when non-nil, replace the spec's (zero fields take
	// defaults).
	Expectations *rundata.Expectations
	// NoImages skips the PNGs (summary.json, report.md and index.html only).
	NoImages bool
	// RunFigureRepeats, when > 0, draws per-run figures only for repeats
	// 1..RunFigureRepeats (the cross-run figures always cover every run),
	// to keep a committed report small.
	RunFigureRepeats int

	// namesOnly lists the figures in the summary without drawing them (for
	// tests that compare report.md: drawing is most of the time).
	namesOnly bool
}

// Names of the cross-run figures.
const (
	ComparisonP99File     = "compare-p99.png"
	ComparisonSuccessFile = "compare-success.png"
	SummaryChartFile      = "summary.png"
)

// WriteReport loads the results folder dir, evaluates it and writes
// summary.json, report.md, index.html and the PNGs (one per run with data,
// the comparison grids and the summary chart). It returns the summary. A
// folder that cannot be read fails with an error wrapping ErrNotResults;
// output is deterministic for the same input.
func WriteReport(dir string, opts Options) (*verdict.Summary, error) {
	exp, err := rundir.Load(dir)
	if err != nil {
		return nil, err
	}
	ex := exp.Expectations
	if opts.Expectations != nil {
		ex = opts.Expectations.WithDefaults()
	}
	sum := verdict.Evaluate(exp, ex)
	out := opts.OutDir
	if out == "" {
		out = dir
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("analysis: report folder: %w", err)
	}
	if !opts.NoImages {
		if err := writeImages(exp, &sum, out, opts.RunFigureRepeats, opts.namesOnly); err != nil {
			return nil, err
		}
	}
	canon, err := canonical(&sum)
	if err != nil {
		return nil, err
	}
	if err := writeSummaryFiles(canon, out); err != nil {
		return nil, err
	}
	for i := range canon.Audits {
		if err := writeAuditFiles(AuditDir(out, canon, i), &canon.Audits[i], !opts.NoImages); err != nil {
			return nil, err
		}
	}
	return canon, nil
}

// AuditDir is where the i-th map of an audit's report goes: the report
// folder itself for an audit of one mode, else audit-<mode>/ in it.
func AuditDir(out string, sum *verdict.Summary, i int) string {
	if len(sum.Audits) == 1 {
		return out
	}
	return filepath.Join(out, "audit-"+sum.Audits[i].Mode)
}

// canonical is sum as summary.json states it: encoded and decoded again, so
// that every number the outputs render is the one summary.json holds (six
// significant digits), and a reader who formats summary.json gets the
// report's strings. The cells' runs, which summary.json does not repeat,
// are kept.
func canonical(sum *verdict.Summary) (*verdict.Summary, error) {
	b, err := MarshalSummary(sum)
	if err != nil {
		return nil, err
	}
	var out verdict.Summary
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("analysis: decode summary: %w", err)
	}
	for i := range out.Cells {
		out.Cells[i].UsedRuns = sum.Cells[i].UsedRuns
	}
	return &out, nil
}

// writeImages renders every figure and records its name in sum.
func writeImages(exp *rundir.Experiment, sum *verdict.Summary, out string, repeats int, namesOnly bool) error {
	// Per-run figures are independent: render them on every core. Names are
	// recorded in run order afterwards, so the output stays deterministic.
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	drawn := make([]bool, len(exp.Runs))
	for i, r := range exp.Runs {
		if len(r.Windows) == 0 || (repeats > 0 && r.Entry.Repeat > repeats) {
			continue
		}
		drawn[i] = true
		if namesOnly {
			continue
		}
		g.Go(func() error {
			return savePNG(filepath.Join(out, "run-"+r.Entry.ID+".png"), runFigure(&measure.Run{Data: r}, sum.Expectations))
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, r := range exp.Runs {
		if drawn[i] {
			name := "run-" + r.Entry.ID + ".png"
			sum.Runs[i].Image = name
			sum.Images = append(sum.Images, name)
		}
	}
	figs := []struct {
		name string
		fig  figure
	}{
		{ComparisonP99File, comparisonFigure(exp, sum.Expectations, metricP99)},
		{ComparisonSuccessFile, comparisonFigure(exp, sum.Expectations, metricSuccess)},
		{SummaryChartFile, summaryFigure(sum)},
		{SizingChartFile, sizingFigure(sum)},
	}
	for _, f := range figs {
		if f.fig == nil {
			continue
		}
		if namesOnly {
			sum.Images = append(sum.Images, f.name)
			continue
		}
		if err := savePNG(filepath.Join(out, f.name), f.fig); err != nil {
			return err
		}
		sum.Images = append(sum.Images, f.name)
	}
	return nil
}

func writeSummaryFiles(sum *verdict.Summary, out string) error {
	b, err := MarshalSummary(sum)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{{rundata.SummaryFile, b}, {rundata.ReportFile, renderMarkdown(sum)}, {rundata.HTMLFile, renderHTML(sum)}}
	for _, f := range files {
		if err := WriteFileAtomic(filepath.Join(out, f.name), f.data); err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
	}
	return nil
}

// MarshalSummary encodes sum as indented JSON with a final newline.
func MarshalSummary(sum *verdict.Summary) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sum); err != nil {
		return nil, fmt.Errorf("analysis: encode summary: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteFileAtomic replaces path with data so that an interrupted write
// leaves the old file or the new one, never a part of it. Every file of a
// report is written this way.
func WriteFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }
