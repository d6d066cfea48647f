package analysis

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
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
	// Runs are in index order.
	Runs []*Run
}

// Run is one run's data. Partial runs are kept: Problems says what is
// missing or damaged, and Usable says whether verdicts may use the run.
type Run struct {
	Entry   rundata.IndexEntry
	Meta    rundata.RunMeta
	Windows []rundata.Window
	Phases  []rundata.PhaseStats
	Metrics []rundata.MetricSample
	// Problems lists what could not be read or is incomplete, e.g.
	// "meta.json: missing" or "status interrupted".
	Problems []string
}

// Complete reports whether the run finished and all its data files were read.
func (r *Run) Complete() bool {
	return len(r.Problems) == 0 && r.Meta.Status == rundata.StatusComplete
}

// Load reads a results folder: index.json, the spec's expectations and every
// run listed in the index. A run whose folder or files are missing or
// truncated (an interrupted run) is returned with its Problems set rather
// than failing the load; a damaged final line of a .jsonl file is dropped.
// Load fails, wrapping ErrNotResults, only when the folder itself is not
// usable.
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
	exp.Expectations, err = readExpectations(filepath.Join(dir, rundata.SpecFile))
	if err != nil {
		return nil, err
	}
	for _, e := range exp.Index.Runs {
		exp.Runs = append(exp.Runs, loadRun(filepath.Join(dir, rundata.RunsDir, e.ID), e))
	}
	return exp, nil
}

// readExpectations reads only the `expectations:` key of a spec file. A
// missing file gives the defaults; a malformed one is an ErrNotResults error.
func readExpectations(path string) (rundata.Expectations, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rundata.DefaultExpectations(), nil
	}
	if err != nil {
		return rundata.Expectations{}, fmt.Errorf("%w: %s: %v", ErrNotResults, path, err)
	}
	var doc struct {
		Expectations rundata.Expectations `yaml:"expectations"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return rundata.Expectations{}, fmt.Errorf("%w: %s: expectations: %v", ErrNotResults, path, err)
	}
	return doc.Expectations.WithDefaults(), nil
}

func loadRun(dir string, e rundata.IndexEntry) *Run {
	r := &Run{Entry: e}
	r.Meta = rundata.RunMeta{ID: e.ID, Mode: e.Mode, Condition: e.Condition, Repeat: e.Repeat, Status: e.Status}
	if _, err := os.Stat(dir); err != nil {
		r.Problems = append(r.Problems, "run folder missing")
		return r
	}
	if err := readJSON(filepath.Join(dir, rundata.MetaFile), &r.Meta); err != nil {
		r.problem(rundata.MetaFile, err)
		r.Meta.Status = e.Status
	}
	if err := readJSON(filepath.Join(dir, rundata.PhasesFile), &r.Phases); err != nil {
		r.problem(rundata.PhasesFile, err)
	}
	var err error
	if r.Windows, err = readJSONL[rundata.Window](filepath.Join(dir, rundata.WindowsFile)); err != nil {
		r.problem(rundata.WindowsFile, err)
	}
	if r.Metrics, err = readJSONL[rundata.MetricSample](filepath.Join(dir, rundata.MetricsFile)); err != nil {
		r.problem(rundata.MetricsFile, err)
	}
	if r.Meta.Status != rundata.StatusComplete {
		r.Problems = append(r.Problems, "status "+r.Meta.Status)
	}
	sort.SliceStable(r.Windows, func(i, j int) bool {
		if r.Windows[i].Endpoint != r.Windows[j].Endpoint {
			return r.Windows[i].Endpoint < r.Windows[j].Endpoint
		}
		return r.Windows[i].Index < r.Windows[j].Index
	})
	sort.SliceStable(r.Metrics, func(i, j int) bool { return r.Metrics[i].Time.Before(r.Metrics[j].Time) })
	return r
}

func (r *Run) problem(file string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		r.Problems = append(r.Problems, file+": missing")
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf("%s: %v", file, err))
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// errTruncated marks a .jsonl file whose last line is damaged; the lines
// before it are returned.
var errTruncated = errors.New("damaged line, rest of file ignored")

// readJSONL decodes one T per line. It stops at the first undecodable line
// and returns what it read with errTruncated (line number included).
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
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
			return out, fmt.Errorf("line %d: %w", line, errTruncated)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}
