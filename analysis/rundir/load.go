package rundir

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"

	"gopkg.in/yaml.v3"
)

// ErrNotResults is returned (wrapped, naming the file) by Load and
// WriteReport when dir is not a readable results folder: it is missing, has
// no index.json, or its index.json or spec.yaml cannot be parsed. Callers map
// it to a usage error.
var ErrNotResults = errors.New("not a results folder")

// Experiment is a results folder as read by Load. It is not safe for
// concurrent mutation; read-only use from several goroutines is fine.
type Experiment struct {
	// Dir is the folder it was read from.
	Dir   string
	Index rundata.Index
	// Expectations are read from spec.yaml's `expectations:` key, with
	// defaults for zero fields (DefaultExpectations when the key is absent).
	Expectations rundata.Expectations
	// Runs are in index order; runs a repeats: auto experiment did not
	// need (status skipped) are left out.
	Runs []*Run
	// AutoRepeats is set when the spec's repeats were auto: the report
	// then says how many repeats each checked verdict needed.
	AutoRepeats bool
	// Audit is the spec's `audit:` block (defaults filled in) when the
	// experiment is a blast-radius audit; CallGraph its calibration's
	// measured call graph (callgraph.json), if any.
	Audit     *rundata.Audit
	CallGraph *rundata.CallGraph
	// Arrivals is the spec's load.arrivals ("" when the spec does not
	// say); Rules its external.rules, how a user's service's responses
	// were classified (nil for the built-in service's, or none given).
	Arrivals string
	Rules    []Rule
}

// Rule is one of a spec's external.rules as written: the responses
// (status, header and its value, or the client's error text) the class
// was given to.
type Rule struct {
	Status string `yaml:"status"`
	Header string `yaml:"header"`
	Value  string `yaml:"value"`
	Error  string `yaml:"error"`
	Class  string `yaml:"class"`
}

// Run is one run's data. Partial runs are kept: Problems says what is
// missing or incomplete, Damaged what is wrong with the data of a run that
// says it completed, and Complete whether verdicts may use the run.
type Run struct {
	Entry   rundata.IndexEntry
	Meta    rundata.RunMeta
	Windows []rundata.Window
	Phases  []rundata.PhaseStats
	Metrics []rundata.MetricSample
	// Problems lists what could not be read or is incomplete, e.g.
	// "meta.json: missing" or "status interrupted".
	Problems []string
	// Damaged lists, as "file:line: what", the data of a complete run that
	// cannot be trusted: an undecodable line, a count or time that cannot
	// be, a duplicate record. A damaged run is not evidence.
	Damaged []string
	// CallGraph is the call graph its experiment's calibration measured
	// (an audit's), and DeclaredCalls the audit's audit.calls: what each
	// endpoint calls beyond the dependency its metadata declares. Nil
	// outside an audit.
	CallGraph     *rundata.CallGraph
	DeclaredCalls map[string][]string
}

// Complete reports whether the run finished and all its data files were read
// and are sound.
func (r *Run) Complete() bool { return complete(r.Meta.Status, r.Problems, r.Damaged) }

// Usable reports whether the verdicts may use the run's numbers (Usable).
func (r *Run) Usable() bool { return Usable(r.Meta.Status, r.Meta.Valid, r.Problems, r.Damaged) }

// Usable reports whether the verdicts may use the numbers of a run with
// this status, validity, problems (what is missing) and damage: it
// completed, its data were all read and are sound, and it is valid (the
// load generator kept the open model). The verdicts' cells hold the runs it
// is true for (measure.RunSummary.Usable); the figures draw the others as
// left out.
func Usable(status string, valid bool, problems, damaged []string) bool {
	return complete(status, problems, damaged) && valid
}

func complete(status string, problems, damaged []string) bool {
	return len(problems) == 0 && len(damaged) == 0 && status == rundata.StatusComplete
}

// Load reads a results folder: index.json, the spec's expectations and every
// run listed in the index. A run whose folder or files are missing or
// truncated (an interrupted run) is returned with its Problems set; a run
// that completed but whose data are damaged is returned with Damaged set.
// Every data file may also be stored gzip-compressed, with ".gz" appended
// to its name. Load fails, wrapping ErrNotResults, only when the folder
// itself is not usable.
func Load(dir string) (*Experiment, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotResults, dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotResults, dir)
	}
	exp := &Experiment{Dir: dir}
	idxPath := filepath.Join(dir, rundata.IndexFile)
	if err := readJSON(idxPath, &exp.Index); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotResults, idxPath, err)
	}
	if err := checkIndex(exp.Index); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotResults, idxPath, err)
	}
	keys, err := readSpecKeys(filepath.Join(dir, rundata.SpecFile))
	if err != nil {
		return nil, err
	}
	exp.Expectations, exp.AutoRepeats, exp.Audit, exp.Arrivals, exp.Rules = keys.expectations, keys.autoRepeats, keys.audit, keys.arrivals, keys.rules
	if exp.Audit != nil {
		gp := filepath.Join(dir, rundata.CallGraphFile)
		var g rundata.CallGraph
		switch err := readJSON(gp, &g); {
		case err == nil:
			exp.CallGraph = &g
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: %s: %v", ErrNotResults, gp, err)
		}
	}
	for _, e := range exp.Index.Runs {
		if e.Status == rundata.StatusSkipped {
			continue
		}
		r := loadRun(filepath.Join(dir, rundata.RunsDir, e.ID), e)
		if exp.Audit != nil {
			r.CallGraph, r.DeclaredCalls = exp.CallGraph, exp.Audit.Calls
		}
		exp.Runs = append(exp.Runs, r)
	}
	return exp, nil
}

// checkIndex refuses an index whose runs cannot name folders: an empty or
// duplicate ID, or one that is not a plain name.
func checkIndex(ix rundata.Index) error {
	seen := map[string]bool{}
	for i, e := range ix.Runs {
		switch {
		case !rundata.ValidRunID(e.ID):
			return fmt.Errorf("runs[%d].id %q is not a run ID (condition-mode-rN, letters, digits, '_', '-', '.')", i, e.ID)
		case seen[e.ID]:
			return fmt.Errorf("runs[%d].id %q appears twice", i, e.ID)
		}
		seen[e.ID] = true
	}
	return nil
}

// specKeys are the keys of a spec file the analysis reads.
type specKeys struct {
	expectations rundata.Expectations
	autoRepeats  bool
	audit        *rundata.Audit
	arrivals     string
	rules        []Rule
}

// readSpecKeys reads only the `expectations:`, `auto_repeats:`, `audit:`,
// `load.arrivals` and `external.rules` keys of a spec file. A missing file
// gives the defaults; a malformed one is an ErrNotResults error. Rules
// that do not decode are left out: they only name what a class meant.
func readSpecKeys(path string) (specKeys, error) {
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return specKeys{expectations: rundata.DefaultExpectations()}, nil
	}
	if err != nil {
		return specKeys{}, fmt.Errorf("%w: %s: %v", ErrNotResults, path, err)
	}
	var doc struct {
		Expectations rundata.Expectations `yaml:"expectations"`
		AutoRepeats  bool                 `yaml:"auto_repeats"`
		Audit        *rundata.Audit       `yaml:"audit"`
		Load         struct {
			Arrivals string `yaml:"arrivals"`
		} `yaml:"load"`
		External struct {
			Rules yaml.Node `yaml:"rules"`
		} `yaml:"external"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return specKeys{}, fmt.Errorf("%w: %s: expectations: %v", ErrNotResults, path, err)
	}
	k := specKeys{expectations: doc.Expectations.WithDefaults(), autoRepeats: doc.AutoRepeats, arrivals: doc.Load.Arrivals}
	if doc.Audit != nil {
		x := doc.Audit.WithDefaults()
		k.audit = &x
	}
	if doc.External.Rules.Kind == yaml.SequenceNode {
		for _, n := range doc.External.Rules.Content {
			var r Rule
			if n.Decode(&r) == nil {
				k.rules = append(k.rules, r)
			}
		}
	}
	return k, nil
}

func loadRun(dir string, e rundata.IndexEntry) *Run {
	r := &Run{Entry: e}
	r.Meta = rundata.RunMeta{ID: e.ID, Mode: e.Mode, Condition: e.Condition, Repeat: e.Repeat, Status: e.Status}
	if _, err := os.Stat(dir); err != nil {
		r.Problems = append(r.Problems, "run folder missing")
		return r
	}
	var metaErr, phaseErr, winErr, metErr error
	if metaErr = readJSON(filepath.Join(dir, rundata.MetaFile), &r.Meta); metaErr != nil {
		r.Meta.Status = e.Status
	}
	phaseErr = readJSON(filepath.Join(dir, rundata.PhasesFile), &r.Phases)
	var winLines, metLines []int
	r.Windows, winLines, winErr = readJSONL[rundata.Window](filepath.Join(dir, rundata.WindowsFile))
	r.Metrics, metLines, metErr = readJSONL[rundata.MetricSample](filepath.Join(dir, rundata.MetricsFile))
	// A run that says it completed must have all its data, sound; one that
	// did not is merely incomplete.
	complete := e.Status == rundata.StatusComplete || r.Meta.Status == rundata.StatusComplete
	for _, f := range []struct {
		file string
		err  error
	}{{rundata.MetaFile, metaErr}, {rundata.PhasesFile, phaseErr}, {rundata.WindowsFile, winErr}, {rundata.MetricsFile, metErr}} {
		if f.err == nil {
			continue
		}
		if complete {
			r.Damaged = append(r.Damaged, describe(f.file, f.err))
		} else {
			r.problem(f.file, f.err)
		}
	}
	switch r.Meta.Status {
	case rundata.StatusComplete:
	case rundata.StatusRunning:
		r.Problems = append(r.Problems, "status running: the runner was killed during this run (interrupted)")
	case rundata.StatusStopped:
		r.Problems = append(r.Problems, MemoryStopText(r.Meta.MemoryStop))
	default:
		r.Problems = append(r.Problems, "status "+r.Meta.Status)
	}
	if complete && metaErr == nil {
		r.Damaged = append(r.Damaged, checkRun(r, winLines, metLines)...)
	}
	sort.SliceStable(r.Windows, func(i, j int) bool {
		if r.Windows[i].Endpoint != r.Windows[j].Endpoint {
			return r.Windows[i].Endpoint < r.Windows[j].Endpoint
		}
		return r.Windows[i].Index < r.Windows[j].Index
	})
	sort.SliceStable(r.Metrics, func(i, j int) bool { return r.Metrics[i].Time.Before(r.Metrics[j].Time) })
	addFleetView(r)
	return r
}

func (r *Run) problem(file string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		r.Problems = append(r.Problems, file+": missing")
		return
	}
	r.Problems = append(r.Problems, describe(file, err))
}

// describe renders a read error as "file:line: what" (or "file: what").
func describe(file string, err error) string {
	var le *lineError
	switch {
	case errors.As(err, &le):
		return fmt.Sprintf("%s:%d: %v", file, le.line, le.err)
	case errors.Is(err, fs.ErrNotExist):
		return file + ": missing"
	}
	return fmt.Sprintf("%s: %v", file, err)
}

// maxDataFile bounds one data file as read (after decompression): a
// results folder is data written by the runner, but it may have been
// damaged or replaced by anything.
const maxDataFile = 1 << 30

// openData opens path, or path+".gz" decompressed, as a regular file.
func openData(path string) (io.ReadCloser, error) {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		gz, gerr := openRegular(path + ".gz")
		if gerr != nil {
			return nil, err // report the plain name as missing
		}
		zr, zerr := gzip.NewReader(gz)
		if zerr != nil {
			gz.Close()
			return nil, fmt.Errorf("%s.gz: %w", filepath.Base(path), zerr)
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(zr, maxDataFile), gz}, nil
	}
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, maxDataFile), f}, nil
}

// openRegular opens path only if it is a regular file (not a device, pipe
// or directory, which could block or never end).
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	return os.Open(path)
}

func readFile(path string) ([]byte, error) {
	f, err := openData(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func readJSON(path string, v any) error {
	b, err := readFile(path)
	if err != nil {
		return err
	}
	return decodeJSON(b, v)
}

// decodeJSON decodes b into v; a syntax error is a *lineError.
func decodeJSON(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &lineError{line: lineOf(b, se.Offset), err: err}
		}
		return err
	}
	return nil
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	n := 1
	for i := int64(0); i < off && i < int64(len(b)); i++ {
		if b[i] == '\n' {
			n++
		}
	}
	return n
}

// lineError is an error at a line of a file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// errTruncated marks a .jsonl file with an undecodable line; the lines
// before it are returned.
var errTruncated = errors.New("undecodable line, rest of file ignored")

// readJSONL decodes one T per line, and returns each one's line number. It
// stops at the first undecodable line and returns what it read with a
// *lineError wrapping errTruncated.
func readJSONL[T any](path string) ([]T, []int, error) {
	f, err := openData(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var out []T
	var lines []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return out, lines, &lineError{line: line, err: fmt.Errorf("%w (%v)", errTruncated, err)}
		}
		out = append(out, v)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return out, lines, &lineError{line: line + 1, err: err}
	}
	return out, lines, nil
}

// MemoryStopText says how the memory guard stopped a run (status stopped):
// "stopped by the memory guard: the service's memory reached 1.0 GiB
// (ceiling 1.0 GiB, validity.max_service_memory) in the fault phase".
func MemoryStopText(m *rundata.MemoryStop) string {
	if m == nil {
		return "status " + rundata.StatusStopped
	}
	where := ""
	if m.Phase != "" {
		where = " in the " + m.Phase + " phase"
	}
	return fmt.Sprintf("stopped by the memory guard: the service's memory reached %.1f MiB (ceiling %.1f MiB, validity.max_service_memory)%s; the service was killed and the load stopped",
		float64(m.RSSBytes)/(1<<20), float64(m.LimitBytes)/(1<<20), where)
}
