package main

// The examples of the help texts and the documentation, run as written.
//
// TestDocumentedExamples collects every example: each line of the Example
// text of every command of newRootCmd()'s tree, and of every page of the
// documentation (README.md and docs/*.md, see docPages) each command line
// of its ```sh blocks and each inline code span that starts with
// "bulkheadlab ", "./bulkheadlab " or "go run ./cmd/bulkheadlab " (lines
// ending in \ joined with the next, # comments stripped). The examples of
// one help text, or of one section of a page, form a session: they run in
// order, in one temporary folder prepared with the files they name (see
// prepareFixtures), and daemons stay up until the session ends, so that
// the curl lines after a proxy example talk to it. Each example runs in
// process, with the root command of newRootCmd():
//
//   - quick commands (list, validate, size, report, version, --version,
//     help) must exit 0, or the code that the example's comment documents
//     ("# exit 2"). report runs with --no-images set on the command before
//     the example's own flags are parsed: drawing the reference's figures
//     takes 4 s, 90 s under -race, and analysis's tests judge the figures;
//   - run and audit examples get --max-duration 1ns appended: they refuse that only
//     after its flags and the spec are parsed and resolved, so the test
//     requires exactly that refusal (exit 2, "more than --max-duration 1ns"),
//     and a misspelt flag or preset fails it;
//   - daemons (serve, dep, proxy) have their fixed --listen, --control and
//     --pprof addresses replaced by 127.0.0.1:0; each must announce its
//     addresses as its first stdout line (internal/announce), and the
//     example addresses of the session are then rewritten to the bound ones
//     everywhere after (a proxy's --upstream, a service's --dep-a, curl's
//     URL); each must exit 0 within 15 s of the session's end;
//   - curl lines run with net/http against a daemon of their session (-X,
//     -d, the path) and need a 2xx; "| grep RE" needs a line of the body
//     matching RE;
//   - go test/build/run/list lines are checked statically: every package
//     exists (go list) and every -run, -bench and -fuzz pattern matches a
//     function of the package's test files (-fuzz: one package, exactly one
//     fuzz test, as go test requires; -run '^$' is the idiom for "no
//     tests"); a `go run ./cmd/bulkheadlab` example runs as a bulkheadlab
//     example and may not use --check, since go run turns the exit codes 2,
//     3 and 4 into 1; `./bulkheadlab` needs an earlier
//     `go build -o bulkheadlab ./cmd/bulkheadlab` in its session;
//   - bash FILE lines: FILE exists in the repository and bash -n accepts it.
//
// Anything else fails, unless documentedExceptions names the example with
// what the test does instead and why.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/bulkheadlab/bulkheadlab/internal/announce"
)

// exception is an example that cannot run as written.
type exception struct {
	text string // the example, as collected
	// instead is the command line the test runs in its place; with
	// parseOnly it resolves the command and parses its flags and arguments
	// without running it.
	instead   string
	parseOnly bool
	why       string
}

// documentedExceptions is the allow-list: every entry must match an example
// (a stale entry fails the test).
var documentedExceptions = []exception{
	{text: "bulkheadlab report DIR", instead: "bulkheadlab report results/breaker-after-drain/20240501T120000Z",
		why: "prose: DIR stands for a results folder (a copy of results/reference-breaker-after-drain, 4 runs: the help's examples report the 24 of results/reference)"},
	{text: "bulkheadlab validate FILE", instead: "bulkheadlab validate my-experiment.yaml",
		why: "prose: FILE stands for a spec file (here docs/experiment-files.md's commented example)"},
	{text: "bulkheadlab size --from DIR", instead: "bulkheadlab size --from results/bulkhead-sizing/20240501T120000Z",
		why: "prose: DIR stands for a sizing sweep's results (a copy of results/reference-bulkhead-sizing)"},
	{text: "bulkheadlab serve --conns-layout shared --conns K", instead: "bulkheadlab serve --conns-layout shared --conns 8", parseOnly: true,
		why: "a fragment naming the flags of one shared connection pool of K (a placeholder); without --dep-a and --dep-b it is not a whole command: its flags are parsed, not run"},
	{text: "bulkheadlab shard --listen 127.0.0.1:0", instead: "bulkheadlab shard --listen 127.0.0.1:0", parseOnly: true,
		why: "a shard waits for a runner to arm it, for ever: TestFleet* and the --shards e2e test run it"},
	{text: "bulkheadlab shard --listen :7070 --allow-remote", instead: "bulkheadlab shard --listen :7070 --allow-remote", parseOnly: true,
		why: "a shard pod's command line (all interfaces): the Kubernetes tests run its agent"},
	{text: "bulkheadlab kube clean -n chaos", instead: "bulkheadlab kube clean -n chaos", parseOnly: true,
		why: "needs a cluster: internal/kube's and experiments/kuberun's tests clean against a real API server"},
	{text: "bulkheadlab kube clean --all --context staging", instead: "bulkheadlab kube clean --all --context staging", parseOnly: true,
		why: "needs a cluster and its context: internal/kube's tests clean against a real API server"},
	{text: "bulkheadlab kube clean", instead: "bulkheadlab kube clean", parseOnly: true,
		why: "prose naming the command; it needs a cluster: internal/kube's tests clean against a real API server"},
	{text: "bulkheadlab run shop.yaml --kubernetes --context staging -n chaos --image registry.example/bulkheadlab:v1 --shards 8 --proxy-replicas 2 --patch-env checkout-shared:PAYMENTS_URL=payments,STOCK_URL=stock --patch-env checkout-bulkhead:PAYMENTS_URL=payments,STOCK_URL=stock",
		instead: "bulkheadlab run shop.yaml --kubernetes --context staging -n chaos --image registry.example/bulkheadlab:v1 --shards 8 --proxy-replicas 2 --patch-env checkout-shared:PAYMENTS_URL=payments,STOCK_URL=stock --patch-env checkout-bulkhead:PAYMENTS_URL=payments,STOCK_URL=stock", parseOnly: true,
		why: "a user's spec on a user's cluster: experiments/kuberun's tests run an experiment on a real API server"},
	{text: "bulkheadlab serve", instead: "bulkheadlab serve", parseOnly: true,
		why: "prose naming the command (docs/design.md's processes), not an invocation: serve without --dep-a is a usage error by design"},
	{text: "bulkheadlab report", instead: "bulkheadlab report results/slow-dependency/20240501T120000Z", parseOnly: true,
		why: "prose naming the command (docs/design.md's analysis), not an invocation: report needs a results folder (here a copy of results/reference)"},
	{text: "bulkheadlab size", instead: "bulkheadlab size", parseOnly: true,
		why: "prose naming the command (\"like `bulkheadlab size`\"), not an invocation: size without --rate is a usage error by design"},
}

// example is one command line of the documentation.
type example struct {
	text    string // as written: continuations joined, the comment stripped
	comment string // the # comment after it, if any
	where   string // FILE:LINE (README.md:12, docs/ci.md:4) or the help text it is in
}

// session is the examples of one help text or one section of a page, run in
// order in one folder.
type session struct {
	name     string
	examples []example
	// doc is the text of the page the session is from (the README's for a
	// help text): prepareFixtures takes spec files from its yaml blocks.
	doc string
}

// page is one page of the documentation: its path from the repository's
// root, slash-separated, and its text.
type page struct {
	file, text string
}

// docPages reads the documentation the tests hold to what the code does:
// README.md, then every docs/*.md page in name order.
func docPages(t *testing.T, repo string) []page {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	files = append([]string{filepath.Join(repo, "README.md")}, files...)
	var out []page
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, f)
		out = append(out, page{filepath.ToSlash(rel), string(b)})
	}
	if len(out) < 2 {
		t.Fatalf("found %d pages of documentation: docs/*.md is missing", len(out))
	}
	return out
}

func TestDocumentedExamples(t *testing.T) {
	repo := repoRoot(t)
	pages := docPages(t, repo)
	// A help text's spec files come from any page (the README's first).
	var all strings.Builder
	for _, p := range pages {
		all.WriteString(p.text + "\n")
	}
	help := helpSessions(newRootCmd())
	for i := range help {
		help[i].doc = all.String()
	}
	var doc []session
	perPage := map[string]int{}
	for _, p := range pages {
		ss := docSessions(p.file, p.text)
		for _, s := range ss {
			perPage[p.file] += len(s.examples)
		}
		doc = append(doc, ss...)
	}
	count := func(ss []session) (n int) {
		for _, s := range ss {
			n += len(s.examples)
		}
		return n
	}
	// The collectors must find something: a change of format that made
	// them find nothing would pass every example.
	if count(help) < 15 || count(doc) < 25 {
		t.Fatalf("collected %d help examples and %d documentation examples: the collectors are broken", count(help), count(doc))
	}
	var counts []string
	for _, p := range pages {
		counts = append(counts, fmt.Sprintf("%s %d", p.file, perPage[p.file]))
	}
	t.Logf("examples: %d from help texts, %d from %d pages (%s)", count(help), count(doc), len(pages), strings.Join(counts, ", "))
	used := map[string]bool{}
	gl := goListerFor(repo)
	ran := 0
	for _, s := range append(help, doc...) {
		t.Run(s.name, func(t *testing.T) {
			ran++
			r := newSessionRunner(t, repo, s.doc, gl, used)
			defer r.stop()
			r.prepareFixtures(s)
			for _, ex := range s.examples {
				r.run(ex)
			}
		})
	}
	if ran < len(help)+len(doc) {
		return // -run chose some sessions
	}
	for _, e := range documentedExceptions {
		if !used[e.text] {
			t.Errorf("documentedExceptions: no example %q any more: drop the entry", e.text)
		}
	}
}

// repoRoot is the module's root folder (the test runs in cmd/bulkheadlab).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// --- collecting -----------------------------------------------------------

// helpSessions collects the Example text of every command of root's tree.
func helpSessions(root *cobra.Command) []session {
	var out []session
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example != "" {
			where := c.CommandPath() + " --help"
			s := session{name: "help/" + strings.ReplaceAll(c.CommandPath(), " ", "_")}
			for _, l := range joinContinuations(strings.Split(c.Example, "\n")) {
				if ex, ok := newExample(l.text, where); ok {
					s.examples = append(s.examples, ex)
				}
			}
			out = append(out, s)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// numberedLine is a line of text (or several joined) and its first line's
// number, from 1.
type numberedLine struct {
	text string
	line int
}

// joinContinuations joins every line that ends in a backslash with the next.
func joinContinuations(lines []string) []numberedLine {
	var out []numberedLine
	for i := 0; i < len(lines); i++ {
		start, text := i, strings.TrimSpace(lines[i])
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSpace(strings.TrimSuffix(text, `\`)) + " " + strings.TrimSpace(lines[i])
		}
		out = append(out, numberedLine{text, start + 1})
	}
	return out
}

// newExample makes an example of a command line, its comment split off; a
// blank or comment-only line is none.
func newExample(line, where string) (example, bool) {
	text, comment := splitComment(line)
	if text == "" {
		return example{}, false
	}
	return example{text: text, comment: comment, where: where}, true
}

// splitComment splits a shell line at its first # that starts a word
// outside quotes.
func splitComment(line string) (string, string) {
	var quote rune
	prev := ' '
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && unicode.IsSpace(prev):
			return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		}
		prev = r
	}
	if strings.HasPrefix(line, "#") {
		return "", strings.TrimSpace(line[1:])
	}
	return strings.TrimSpace(line), ""
}

// inlinePrefixes start the inline code spans of a page that are examples.
var inlinePrefixes = []string{"bulkheadlab ", "./bulkheadlab ", "go run ./cmd/bulkheadlab "}

// readmeSessions collects the examples of README.md's text md.
func readmeSessions(md string) []session { return docSessions("README.md", md) }

// docSessions collects the examples of the page file (its path from the
// repository's root) whose text is md, one session per section: the
// command lines of its ```sh blocks and its inline code spans that start
// with one of inlinePrefixes, in the order of their lines. A session is
// named for the page (its path without .md) and the section's title.
func docSessions(file, md string) []session {
	lines := strings.Split(md, "\n")
	prefix := strings.TrimSuffix(file, ".md")
	var (
		out   []session
		cur   = session{name: prefix + "/top", doc: md}
		prose []numberedLine // the section's lines outside fenced blocks
	)
	flush := func() {
		cur.examples = append(cur.examples, inlineExamples(file, prose)...)
		slices.SortStableFunc(cur.examples, func(a, b example) int { return exampleLine(a.where) - exampleLine(b.where) })
		if len(cur.examples) > 0 {
			out = append(out, cur)
		}
		prose = nil
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if fence, info, ok := fenceOpen(l); ok {
			var block []string
			j := i + 1
			for ; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), fence); j++ {
				block = append(block, lines[j])
			}
			if info == "sh" {
				for _, nl := range joinContinuations(block) {
					if ex, ok := newExample(nl.text, fmt.Sprintf("%s:%d", file, i+1+nl.line)); ok {
						cur.examples = append(cur.examples, ex)
					}
				}
			}
			for k := i; k <= j && k < len(lines); k++ {
				prose = append(prose, numberedLine{"", k + 1}) // a blank line ends a code span
			}
			i = j
			continue
		}
		if strings.HasPrefix(l, "#") {
			flush()
			title := strings.TrimSpace(strings.TrimLeft(l, "#"))
			cur = session{doc: md, name: prefix + "/" + strings.Map(func(r rune) rune {
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					return r
				}
				return '_'
			}, title)}
			continue
		}
		prose = append(prose, numberedLine{l, i + 1})
	}
	flush()
	return out
}

// exampleLine is the line number of an example's FILE:LINE.
func exampleLine(where string) int {
	n, _ := strconv.Atoi(where[strings.LastIndexByte(where, ':')+1:])
	return n
}

// fenceOpen reports whether l opens a fenced code block, with its fence and
// info string.
func fenceOpen(l string) (fence, info string, ok bool) {
	s := strings.TrimLeft(l, " ")
	if len(l)-len(s) > 3 {
		return "", "", false
	}
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(s, f) {
			n := len(s) - len(strings.TrimLeft(s, f[:1]))
			return s[:n], strings.TrimSpace(s[n:]), true
		}
	}
	return "", "", false
}

// inlineExamples finds the code spans of prose (which may run over line
// breaks, not over a blank line) that start with one of inlinePrefixes.
func inlineExamples(file string, prose []numberedLine) []example {
	var (
		text   strings.Builder
		starts []int // byte offset of each line in text
	)
	for _, l := range prose {
		starts = append(starts, text.Len())
		text.WriteString(l.text)
		text.WriteByte('\n')
	}
	s := text.String()
	lineAt := func(off int) int {
		i, found := slices.BinarySearch(starts, off)
		if !found {
			i--
		}
		return prose[i].line
	}
	var out []example
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		open := i + n
		end := -1
		for j := open; j < len(s); {
			if s[j] == '\n' && j+1 < len(s) && s[j+1] == '\n' {
				break
			}
			if s[j] != '`' {
				j++
				continue
			}
			m := 1
			for j+m < len(s) && s[j+m] == '`' {
				m++
			}
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 {
			i = open
			continue
		}
		code := strings.Join(strings.Fields(s[open:end]), " ")
		for _, p := range inlinePrefixes {
			if strings.HasPrefix(code, p) {
				if ex, ok := newExample(code, fmt.Sprintf("%s:%d", file, lineAt(open))); ok {
					out = append(out, ex)
				}
				break
			}
		}
		i = end + n
	}
	return out
}

// --- shell words ----------------------------------------------------------

// command is one simple command of a line: its words, and whether its
// output is piped into the next.
type command struct {
	args []string
	pipe bool
}

// parseLine splits a command line into simple commands at ;, &&, & and |,
// with shell quoting. Anything a shell would expand or redirect is an
// error: the test would not run the example as written.
func parseLine(line string) ([]command, error) {
	var (
		cmds []command
		cur  []string
		word strings.Builder
		in   bool // a word is open
	)
	endWord := func() {
		if in {
			cur = append(cur, word.String())
			word.Reset()
			in = false
		}
	}
	endCmd := func(pipe bool) error {
		endWord()
		if len(cur) == 0 {
			return fmt.Errorf("empty command in %q", line)
		}
		cmds = append(cmds, command{args: cur, pipe: pipe})
		cur = nil
		return nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", line)
			}
			word.WriteString(line[i+1 : i+1+j])
			in, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch line[i] {
				case '\\':
					if i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
						i++
					}
				case '$', '`':
					return nil, fmt.Errorf("shell expansion in %q", line)
				}
				word.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, fmt.Errorf(`unclosed " in %q`, line)
			}
			in = true
		case c == '\\':
			if i+1 < len(line) {
				i++
				word.WriteByte(line[i])
				in = true
			}
		case c == ';':
			if err := endCmd(false); err != nil {
				return nil, err
			}
		case c == '&':
			if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
			if err := endCmd(false); err != nil {
				return nil, err
			}
		case c == '|':
			if i+1 < len(line) && line[i+1] == '|' {
				return nil, fmt.Errorf("|| in %q", line)
			}
			if err := endCmd(true); err != nil {
				return nil, err
			}
		case c == '$' || c == '`' || c == '<' || c == '>' || c == '*' || c == '?' || c == '(' || c == ')' || c == '~' && !in:
			return nil, fmt.Errorf("%q: the test does not expand or redirect (%c)", line, c)
		default:
			word.WriteByte(c)
			in = true
		}
	}
	endWord()
	if len(cur) > 0 {
		cmds = append(cmds, command{args: cur})
	} else if len(cmds) > 0 && cmds[len(cmds)-1].pipe {
		return nil, fmt.Errorf("a pipe into nothing in %q", line)
	}
	return cmds, nil
}

// --- running --------------------------------------------------------------

// sessionRunner runs the examples of one session.
type sessionRunner struct {
	t    *testing.T
	repo string
	doc  string // the text of the session's page
	gl   *goLister
	used map[string]bool

	ctx     context.Context
	cancel  context.CancelFunc
	addrs   map[string]string // an example's address → the one bound
	daemons []*daemon
	built   map[string]bool // binaries built by the session's go build examples
	did     []string        // what the test did with the current example
}

// note records what the test did with the current example, for -v.
func (r *sessionRunner) note(format string, args ...any) {
	r.did = append(r.did, fmt.Sprintf(format, args...))
}

func newSessionRunner(t *testing.T, repo, doc string, gl *goLister, used map[string]bool) *sessionRunner {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	return &sessionRunner{t: t, repo: repo, doc: doc, gl: gl, used: used, ctx: ctx, cancel: cancel,
		addrs: map[string]string{}, built: map[string]bool{}}
}

// fail reports a broken example: where it is, its text, what went wrong.
func (r *sessionRunner) fail(ex example, format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: `%s`:\n%s", ex.where, ex.text, fmt.Sprintf(format, args...))
}

// resultsPath is a results folder an example names:
// results/<experiment>/<UTC timestamp>.
var resultsPath = regexp.MustCompile(`^results/([a-z0-9-]+)/\d{8}T\d{6}Z$`)

// prepareFixtures writes the files the session's examples name into the
// current folder: a spec file NAME.yaml from the page's yaml block whose
// first line is "name: NAME", and each results folder
// results/EXPERIMENT/TIMESTAMP as a copy of results/reference-EXPERIMENT
// if there is one, else of results/reference.
func (r *sessionRunner) prepareFixtures(s session) {
	t := r.t
	for _, ex := range s.examples {
		text := ex.text
		if e, ok := exceptionFor(text); ok {
			text = e.instead
		}
		cmds, err := parseLine(text)
		if err != nil {
			continue // run reports it
		}
		for _, c := range cmds {
			for _, a := range c.args {
				if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
					a = v
				}
				switch {
				case strings.HasSuffix(a, ".yaml") && !strings.Contains(a, "/"):
					if _, err := os.Stat(a); err == nil {
						continue
					}
					if body, ok := docSpec(r.doc, strings.TrimSuffix(a, ".yaml")); ok {
						if err := os.WriteFile(a, []byte(body), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				case resultsPath.MatchString(a):
					if _, err := os.Stat(a); err == nil {
						continue
					}
					src := filepath.Join(r.repo, "results", "reference-"+resultsPath.FindStringSubmatch(a)[1])
					if _, err := os.Stat(src); err != nil {
						src = filepath.Join(r.repo, "results", "reference")
					}
					if err := copyTree(src, a); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

// docSpec returns the yaml block of a page whose first line is
// "name: NAME".
func docSpec(md, name string) (string, bool) {
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		fence, info, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), fence) {
			j++
		}
		if info == "yaml" && i+1 < j && strings.TrimSpace(lines[i+1]) == "name: "+name {
			return strings.Join(lines[i+1:j], "\n") + "\n", true
		}
		i = j
	}
	return "", false
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func exceptionFor(text string) (exception, bool) {
	for _, e := range documentedExceptions {
		if e.text == text {
			return e, true
		}
	}
	return exception{}, false
}

// run runs one example.
func (r *sessionRunner) run(ex example) {
	r.t.Helper()
	text := ex.text
	parseOnly := false
	if e, ok := exceptionFor(text); ok {
		r.used[e.text] = true
		text, parseOnly = e.instead, e.parseOnly
	}
	cmds, err := parseLine(text)
	if err != nil {
		r.fail(ex, "%v", err)
		return
	}
	r.did = nil
	if text != ex.text {
		r.note("as %q (documentedExceptions)", text)
	}
	defer func() { r.t.Logf("%s: %s: %s", ex.where, ex.text, strings.Join(r.did, "; ")) }()
	var piped []byte
	for i, c := range cmds {
		if i > 0 && cmds[i-1].pipe {
			if c.args[0] != "grep" {
				r.fail(ex, "the test runs only grep after a pipe, not %s", c.args[0])
				return
			}
			r.grep(ex, c.args, piped)
			continue
		}
		out, ok := r.runCommand(ex, c.args, parseOnly)
		if !ok {
			return
		}
		if c.pipe {
			if c.args[0] != "curl" {
				r.fail(ex, "the test pipes only curl's output, not %s's", c.args[0])
				return
			}
			piped = out
		}
	}
}

// runCommand runs one simple command; curl's body is returned for a pipe.
func (r *sessionRunner) runCommand(ex example, args []string, parseOnly bool) ([]byte, bool) {
	switch args[0] {
	case "bulkheadlab":
		return nil, r.bulkheadlab(ex, args[1:], parseOnly)
	case "./bulkheadlab":
		if !r.built["bulkheadlab"] {
			r.fail(ex, "./bulkheadlab before any example of this section builds it (go build -o bulkheadlab ./cmd/bulkheadlab)")
			return nil, false
		}
		return nil, r.bulkheadlab(ex, args[1:], parseOnly)
	case "go":
		return nil, r.goCommand(ex, args)
	case "bash":
		return nil, r.bash(ex, args)
	case "curl":
		return r.curl(ex, args)
	}
	r.fail(ex, "the test does not know how to run %s: run it in the test or add it to documentedExceptions with a reason", args[0])
	return nil, false
}

// documentedExit is the exit code an example's comment documents
// ("# exit 2", "# exits 1 ..."), else 0.
func documentedExit(comment string) int {
	m := regexp.MustCompile(`\bexits? (\d+)\b`).FindStringSubmatch(comment)
	if m == nil {
		return ExitOK
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// bulkheadlab runs `bulkheadlab args` in process.
func (r *sessionRunner) bulkheadlab(ex example, args []string, parseOnly bool) bool {
	r.t.Helper()
	root := newRootCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		r.fail(ex, "no such command: %v", err)
		return false
	}
	name := c.Name()
	if parseOnly {
		if err := c.ParseFlags(rest); err != nil {
			r.fail(ex, "its flags: %v", err)
			return false
		}
		if err := c.ValidateArgs(c.Flags().Args()); err != nil {
			r.fail(ex, "its arguments: %v", err)
			return false
		}
		r.note("flags of %s parsed", c.CommandPath())
		return true
	}
	help := slices.Contains(args, "--help") || slices.Contains(args, "-h")
	switch {
	case help:
	case name == "run" || name == "audit":
		args = append(slices.Clone(args), "--max-duration", "1ns")
		code, out := r.execute(root, args)
		const want = "more than --max-duration 1ns"
		if code != ExitUsage || !strings.Contains(out, want) {
			r.fail(ex, "with --max-duration 1ns: exit %d, want %d and %q (run refuses only after the flags and the spec parse):\n%s",
				code, ExitUsage, want, truncate(out))
			return false
		}
		r.note("refused as it should with --max-duration 1ns")
		return true
	case name == "serve" || name == "dep" || name == "proxy" || name == "postgres":
		return r.startDaemon(ex, root, name, args)
	case name == "shard":
		// It would wait for a runner to arm it until the session's
		// deadline.
		r.fail(ex, "a shard waits for a runner for ever: name it in prose, or list it in documentedExceptions (parseOnly)")
		return false
	}
	if f := c.Flags().Lookup("no-images"); f != nil {
		_ = f.Value.Set("true")
	}
	code, out := r.execute(root, args)
	if want := documentedExit(ex.comment); code != want {
		r.fail(ex, "exit %d, want %d:\n%s", code, want, truncate(out))
		return false
	}
	r.note("exit %d", code)
	return true
}

// execute runs root with args to its end and returns its exit code and
// everything it wrote (stdout, stderr, then the error).
func (r *sessionRunner) execute(root *cobra.Command, args []string) (int, string) {
	var buf syncBuffer
	root.SetArgs(args)
	root.SetOut(&buf)
	root.SetErr(&buf)
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(&buf, "error: %v\n", err)
	}
	return exitCode(err), buf.String()
}

func truncate(s string) string {
	const most = 4000
	if len(s) > most {
		return s[:most/2] + "\n[…]\n" + s[len(s)-most/2:]
	}
	return s
}

// syncBuffer is a bytes.Buffer for several goroutines; firstLine is closed
// once it holds a newline.
type syncBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	once      sync.Once
	firstLine chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.firstLine != nil && bytes.IndexByte(s.b.Bytes(), '\n') >= 0 {
		s.once.Do(func() { close(s.firstLine) })
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemon is a serve, dep or proxy example running in process.
type daemon struct {
	ex     example
	errc   chan error
	stdout *syncBuffer
	stderr *syncBuffer
}

// exampleAddr is a loopback address in an example.
var exampleAddr = regexp.MustCompile(`(?:127\.0\.0\.1|localhost):\d+`)

// rewriteAddrs replaces the example addresses in s that a daemon of the
// session is bound in place of.
func (r *sessionRunner) rewriteAddrs(s string) string {
	return exampleAddr.ReplaceAllStringFunc(s, func(a string) string {
		if b, ok := r.addrs[a]; ok {
			return b
		}
		return a
	})
}

// startDaemon starts a serve, dep or proxy example, its fixed listen
// addresses replaced by 127.0.0.1:0, and waits for its announcement.
func (r *sessionRunner) startDaemon(ex example, root *cobra.Command, name string, args []string) bool {
	r.t.Helper()
	args = slices.Clone(args)
	fixed := map[string]string{} // flag → the example's address
	for i := 0; i < len(args); i++ {
		flag, val, eq := strings.Cut(args[i], "=")
		if flag != "--listen" && flag != "--control" && flag != "--pprof" {
			args[i] = r.rewriteAddrs(args[i])
			continue
		}
		if !eq {
			if i+1 == len(args) {
				break
			}
			i++
			val = args[i]
		}
		if !strings.HasSuffix(val, ":0") {
			if _, taken := r.addrs[val]; taken {
				r.fail(ex, "%s %s: an earlier example of this section listens there", flag, val)
				return false
			}
			fixed[flag] = val
		}
		if eq {
			args[i] = flag + "=127.0.0.1:0"
		} else {
			args[i] = "127.0.0.1:0"
		}
	}
	d := &daemon{ex: ex, errc: make(chan error, 1), stdout: &syncBuffer{firstLine: make(chan struct{})}, stderr: &syncBuffer{}}
	root.SetArgs(args)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	go func() { d.errc <- root.ExecuteContext(r.ctx) }()
	select {
	case <-d.stdout.firstLine:
	case err := <-d.errc:
		r.fail(ex, "exited (%d) before announcing its addresses: %v\n%s", exitCode(err), err, truncate(d.stderr.String()))
		return false
	case <-time.After(15 * time.Second):
		r.fail(ex, "no announcement within 15 s:\n%s", truncate(d.stderr.String()))
		r.daemons = append(r.daemons, d)
		return false
	}
	r.daemons = append(r.daemons, d)
	a, err := announce.Read(strings.NewReader(d.stdout.String()))
	if err != nil {
		r.fail(ex, "its first stdout line is no announcement: %v", err)
		return false
	}
	if want := map[string]string{"serve": "service", "dep": "dep", "proxy": "proxy", "postgres": "postgres"}[name]; a.Component != want {
		r.fail(ex, "announced component %q, want %q", a.Component, want)
	}
	r.note("%s announced %s %s", name, a.Addr, a.Control)
	for flag, orig := range fixed {
		switch flag {
		case "--listen":
			r.addrs[orig] = a.Addr
		case "--control":
			if a.Control == "" {
				r.fail(ex, "announced no control address")
			}
			r.addrs[orig] = a.Control
		}
	}
	return true
}

// stop ends the session's daemons and requires each to exit 0.
func (r *sessionRunner) stop() {
	r.cancel()
	for _, d := range r.daemons {
		select {
		case err := <-d.errc:
			if err != nil {
				r.fail(d.ex, "did not stop cleanly when its context ended: exit %d: %v\n%s", exitCode(err), err, truncate(d.stderr.String()))
			}
		case <-time.After(15 * time.Second):
			r.fail(d.ex, "still running 15 s after its context ended")
		}
	}
}

// curl runs a curl example with net/http against a daemon of the session.
func (r *sessionRunner) curl(ex example, args []string) ([]byte, bool) {
	r.t.Helper()
	method, target := "", ""
	var body *string
	header := http.Header{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-H" || a == "--header":
			if i+1 == len(args) {
				r.fail(ex, "curl %s without a value", a)
				return nil, false
			}
			i++
			k, v, ok := strings.Cut(args[i], ":")
			if !ok {
				r.fail(ex, "curl %s %q is not Name: value", a, args[i])
				return nil, false
			}
			header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "-X" || a == "--request" || a == "-d" || a == "--data":
			if i+1 == len(args) {
				r.fail(ex, "curl %s without a value", a)
				return nil, false
			}
			i++
			if a == "-X" || a == "--request" {
				method = args[i]
			} else {
				v := args[i]
				body = &v
			}
		case a == "-i" || a == "-s" || a == "-sS" || a == "-S" || a == "-f" || a == "-fsS":
		case strings.HasPrefix(a, "-"):
			r.fail(ex, "the test's curl does not know %s", a)
			return nil, false
		case target != "":
			r.fail(ex, "curl with two URLs")
			return nil, false
		default:
			target = a
		}
	}
	if target == "" {
		r.fail(ex, "curl without a URL")
		return nil, false
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		r.fail(ex, "curl: %v", err)
		return nil, false
	}
	bound, ok := r.addrs[u.Host]
	if !ok {
		r.fail(ex, "curl %s: no example of this section started a daemon there", u.Host)
		return nil, false
	}
	u.Host = bound
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(*body)
	}
	req, err := http.NewRequestWithContext(r.ctx, method, u.String(), rd)
	if err != nil {
		r.fail(ex, "curl: %v", err)
		return nil, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl -d sends
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		r.fail(ex, "curl: %v", err)
		return nil, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		r.fail(ex, "%s %s: %s, want 2xx:\n%s", method, u.Path, resp.Status, truncate(string(b)))
		return nil, false
	}
	r.note("%s %s: %s", method, u.Path, resp.Status)
	return b, true
}

// grep requires a line of in to match the pattern of `grep PATTERN`.
func (r *sessionRunner) grep(ex example, args []string, in []byte) {
	r.t.Helper()
	if len(args) != 2 || strings.HasPrefix(args[1], "-") {
		r.fail(ex, "the test's grep takes one pattern, got %q", args[1:])
		return
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		r.fail(ex, "grep %s: %v", args[1], err)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if re.MatchString(sc.Text()) {
			r.note("grep matched %q", sc.Text())
			return
		}
	}
	r.fail(ex, "grep %s: no line matches (grep would exit 1) in:\n%s", args[1], truncate(string(in)))
}

// bash checks `bash FILE ...`: FILE is in the repository and bash -n
// accepts it.
func (r *sessionRunner) bash(ex example, args []string) bool {
	r.t.Helper()
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		r.fail(ex, "the test checks only `bash FILE [ARGS]`")
		return false
	}
	file := filepath.Join(r.repo, filepath.FromSlash(args[1]))
	if _, err := os.Stat(file); err != nil {
		r.fail(ex, "%v", err)
		return false
	}
	if out, err := exec.Command("bash", "-n", file).CombinedOutput(); err != nil {
		r.fail(ex, "bash -n %s: %v\n%s", args[1], err, out)
		return false
	}
	r.note("bash -n %s: ok", args[1])
	return true
}

// --- go commands ----------------------------------------------------------

// goFlagsWithValue are the flags of go build, run, test and list (and of
// test binaries) that take a value; other flags must be in goBoolFlags.
var goFlagsWithValue = map[string]bool{
	"-o": true, "-tags": true, "-timeout": true, "-run": true, "-skip": true, "-bench": true, "-fuzz": true,
	"-count": true, "-cpu": true, "-parallel": true, "-benchtime": true, "-fuzztime": true, "-fuzzminimizetime": true,
	"-coverprofile": true, "-cpuprofile": true, "-memprofile": true, "-p": true, "-ldflags": true, "-gcflags": true,
	"-f": true, "-mod": true, "-exec": true, "-vet": true, "-list": true, "-covermode": true, "-coverpkg": true,
}

var goBoolFlags = map[string]bool{
	"-race": true, "-v": true, "-short": true, "-cover": true, "-x": true, "-n": true, "-a": true, "-trimpath": true,
	"-benchmem": true, "-failfast": true, "-json": true, "-e": true, "-m": true,
}

// goCommand checks a go build/run/test/list/vet example statically; `go run
// ./cmd/bulkheadlab ARGS` also runs ARGS as a bulkheadlab example.
func (r *sessionRunner) goCommand(ex example, args []string) bool {
	r.t.Helper()
	if len(args) < 2 {
		r.fail(ex, "go without a command")
		return false
	}
	sub := args[1]
	switch sub {
	case "build", "run", "test", "list", "vet":
	default:
		r.fail(ex, "the test does not check `go %s`", sub)
		return false
	}
	flags := map[string]string{}
	var pkgs, progArgs []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		if sub == "run" && len(pkgs) == 1 {
			progArgs = args[i:]
			break
		}
		if !strings.HasPrefix(a, "-") {
			pkgs = append(pkgs, a)
			continue
		}
		name, val, eq := strings.Cut(strings.Replace(a, "--", "-", 1), "=")
		switch {
		case goBoolFlags[name]:
		case goFlagsWithValue[name]:
			if !eq {
				if i+1 == len(args) {
					r.fail(ex, "%s without a value", name)
					return false
				}
				i++
				val = args[i]
			}
			flags[name] = val
		default:
			r.fail(ex, "the test does not know go %s's flag %s: add it to goFlagsWithValue or goBoolFlags", sub, name)
			return false
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	ps, err := r.gl.list(flags["-tags"], pkgs)
	if err != nil {
		r.fail(ex, "%v", err)
		return false
	}
	ok := true
	var names []string
	for _, p := range ps {
		names = append(names, p.ImportPath)
	}
	if len(names) > 4 {
		names = append(names[:3], fmt.Sprintf("… (%d packages)", len(ps)))
	}
	r.note("go list: %s", strings.Join(names, " "))
	switch sub {
	case "build", "run":
		for _, p := range ps {
			if p.Name != "main" {
				r.fail(ex, "%s is package %s, not a command", p.ImportPath, p.Name)
				ok = false
			}
		}
		if sub == "build" && flags["-o"] != "" && len(ps) == 1 && strings.HasSuffix(ps[0].ImportPath, "/cmd/bulkheadlab") {
			r.built[flags["-o"]] = true
		}
		if sub == "run" && len(ps) == 1 && strings.HasSuffix(ps[0].ImportPath, "/cmd/bulkheadlab") {
			if slices.Contains(progArgs, "--check") {
				r.fail(ex, "go run reports every failing exit of the program as 1, so --check's codes 2, 3 and 4 read 1: build the binary (go build -o bulkheadlab ./cmd/bulkheadlab) and run ./bulkheadlab")
				ok = false
			}
			ok = r.bulkheadlab(ex, progArgs, false) && ok
		}
	case "test":
		ok = r.checkTestPatterns(ex, flags, pkgs, ps)
	}
	return ok
}

// checkTestPatterns requires every -run, -bench and -fuzz pattern to match
// a function of the packages' test files, as go test would run it.
func (r *sessionRunner) checkTestPatterns(ex example, flags map[string]string, patterns []string, ps []*goPackage) bool {
	r.t.Helper()
	ok := true
	wildcard := slices.ContainsFunc(patterns, func(p string) bool { return strings.Contains(p, "...") })
	for _, f := range []struct{ flag, prefix string }{{"-run", "Test"}, {"-bench", "Benchmark"}, {"-fuzz", "Fuzz"}} {
		pat, set := flags[f.flag]
		if !set || (f.flag == "-run" && pat == "^$") {
			continue
		}
		re, err := regexp.Compile(strings.SplitN(pat, "/", 2)[0])
		if err != nil {
			r.fail(ex, "%s %s: %v", f.flag, pat, err)
			ok = false
			continue
		}
		prefixes := []string{f.prefix}
		if f.flag == "-run" {
			prefixes = []string{"Test", "Fuzz", "Example"}
		}
		total := 0
		for _, p := range ps {
			var hits []string
			for _, fn := range p.testFuncs(prefixes...) {
				if re.MatchString(fn) {
					hits = append(hits, fn)
				}
			}
			total += len(hits)
			if len(hits) > 0 {
				r.note("%s %s: %s in %s", f.flag, pat, strings.Join(hits, " "), p.ImportPath)
			}
			if f.flag == "-fuzz" && len(hits) != 1 {
				r.fail(ex, "-fuzz %s matches %d fuzz tests of %s (%s), want exactly one", pat, len(hits), p.ImportPath, strings.Join(hits, ", "))
				ok = false
			}
			if len(hits) == 0 && !wildcard && f.flag != "-fuzz" {
				r.fail(ex, "%s %s matches no %s function of %s", f.flag, pat, f.prefix, p.ImportPath)
				ok = false
			}
		}
		if f.flag == "-fuzz" && len(ps) != 1 {
			r.fail(ex, "-fuzz needs exactly one package, got %d", len(ps))
			ok = false
		}
		if total == 0 && wildcard {
			r.fail(ex, "%s %s matches no %s function of %s", f.flag, pat, f.prefix, strings.Join(patterns, " "))
			ok = false
		}
	}
	return ok
}

// goPackage is what go list says of a package.
type goPackage struct {
	ImportPath, Dir, Name     string
	TestGoFiles, XTestGoFiles []string

	once  sync.Once
	funcs []string // top-level functions of its test files
	err   error
}

// testFuncs returns the package's test functions with one of prefixes
// (TestXxx, where Xxx does not start with a lower-case letter).
func (p *goPackage) testFuncs(prefixes ...string) []string {
	p.once.Do(func() {
		fset := token.NewFileSet()
		for _, f := range append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...) {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				p.err = err
				return
			}
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					p.funcs = append(p.funcs, fd.Name.Name)
				}
			}
		}
	})
	var out []string
	for _, fn := range p.funcs {
		for _, pre := range prefixes {
			rest, ok := strings.CutPrefix(fn, pre)
			if r, _ := utf8.DecodeRuneInString(rest); ok && (rest == "" || !unicode.IsLower(r)) {
				out = append(out, fn)
				break
			}
		}
	}
	return out
}

var (
	goListers  sync.Mutex
	goListerOf = map[string]*goLister{}
)

// goListerFor returns the one goLister of repo, so that the tests share its
// answers.
func goListerFor(repo string) *goLister {
	goListers.Lock()
	defer goListers.Unlock()
	if goListerOf[repo] == nil {
		goListerOf[repo] = &goLister{repo: repo}
	}
	return goListerOf[repo]
}

// goLister runs go list in the repository and caches its answers.
type goLister struct {
	repo  string
	mu    sync.Mutex
	cache map[string][]*goPackage
}

func (g *goLister) list(tags string, patterns []string) ([]*goPackage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := tags + "\x00" + strings.Join(patterns, "\x00")
	if ps, ok := g.cache[key]; ok {
		return ps, nil
	}
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gocmd); err != nil {
		gocmd = "go"
	}
	args := []string{"list", "-json"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(gocmd, append(args, patterns...)...)
	cmd.Dir = g.repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	var ps []*goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(goPackage)
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %v", err)
		}
		ps = append(ps, p)
	}
	if g.cache == nil {
		g.cache = map[string][]*goPackage{}
	}
	g.cache[key] = ps
	return ps, nil
}

// fuzzPage is the page that lists the fuzz tests.
const fuzzPage = "docs/development.md"

// TestDocumentedFuzzTargets: every fuzz test of the module is named by a
// line `go test -run '^$' -fuzz PATTERN PACKAGE` of fuzzPage whose pattern
// selects it in its package (TestDocumentedExamples checks that each such
// line selects exactly one), so that the page lists them all.
func TestDocumentedFuzzTargets(t *testing.T) {
	repo := repoRoot(t)
	dev, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(fuzzPage)))
	if err != nil {
		t.Fatal(err)
	}
	gl := goListerFor(repo)
	type line struct {
		re    *regexp.Regexp
		pkg   string // import path
		where string
	}
	var lines []line
	for _, s := range docSessions(fuzzPage, string(dev)) {
		for _, ex := range s.examples {
			cmds, err := parseLine(ex.text)
			if err != nil {
				continue
			}
			for _, c := range cmds {
				if len(c.args) < 2 || c.args[0] != "go" || c.args[1] != "test" {
					continue
				}
				var pat string
				var pkgs []string
				for i := 2; i < len(c.args); i++ {
					a := c.args[i]
					name, val, eq := strings.Cut(a, "=")
					switch {
					case goFlagsWithValue[name] && !eq:
						i++
						if name == "-fuzz" && i < len(c.args) {
							pat = c.args[i]
						}
					case name == "-fuzz":
						pat = val
					case !strings.HasPrefix(a, "-"):
						pkgs = append(pkgs, a)
					}
				}
				re, err := regexp.Compile(pat)
				if pat == "" || err != nil || len(pkgs) != 1 {
					continue
				}
				ps, err := gl.list("", pkgs)
				if err != nil || len(ps) != 1 {
					continue
				}
				lines = append(lines, line{re, ps[0].ImportPath, ex.where})
			}
		}
	}
	all, err := gl.list("", []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range all {
		for _, fn := range p.testFuncs("Fuzz") {
			n++
			if !slices.ContainsFunc(lines, func(l line) bool { return l.pkg == p.ImportPath && l.re.MatchString(fn) }) {
				rel := "." + strings.TrimPrefix(p.ImportPath, "github.com/bulkheadlab/bulkheadlab")
				pat := fn
				if len(slices.DeleteFunc(p.testFuncs("Fuzz"), func(f string) bool { return !strings.Contains(f, fn) })) > 1 {
					pat = "'^" + fn + "$'" // FuzzParse alone would select FuzzParseByteSize too
				}
				t.Errorf("%s names no `go test -run '^$' -fuzz %s %s`: add it to its block of fuzz tests", fuzzPage, pat, rel)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no fuzz test in the module: the lister is broken")
	}
}

// TestDocumentedCollector: what the collectors take from a README and a
// help text, and how a line splits into commands.
func TestDocumentedCollector(t *testing.T) {
	md := "# Top\n" +
		"Run `bulkheadlab list` or `bulkheadlab dep --capacity 4\n" +
		"--queue 100`; `run --resume DIR` is prose, ``go run ./cmd/bulkheadlab version`` is one.\n" +
		"\n" +
		"```sh\n" +
		"go build -o bulkheadlab ./cmd/bulkheadlab   # build it\n" +
		"# a comment line\n" +
		"./bulkheadlab serve --listen 127.0.0.1:8080 \\\n" +
		"    --mode shared &\n" +
		"curl -d '{\"a\":\"#1\"}' 127.0.0.1:8080/x  # a comment\n" +
		"```\n" +
		"## Next\n" +
		"```yaml\n" +
		"name: x\n" +
		"seed: 1   # `bulkheadlab list` in yaml is no example\n" +
		"```\n" +
		"`bulkheadlab validate\n\nx` spans a blank line: no example.\n"
	var got []string
	for _, s := range readmeSessions(md) {
		for _, ex := range s.examples {
			got = append(got, s.name+" "+ex.where+" "+ex.text+" #"+ex.comment)
		}
	}
	want := []string{
		"README/Top README.md:2 bulkheadlab list #",
		"README/Top README.md:2 bulkheadlab dep --capacity 4 --queue 100 #",
		"README/Top README.md:3 go run ./cmd/bulkheadlab version #",
		"README/Top README.md:6 go build -o bulkheadlab ./cmd/bulkheadlab #build it",
		"README/Top README.md:8 ./bulkheadlab serve --listen 127.0.0.1:8080 --mode shared & #",
		"README/Top README.md:10 curl -d '{\"a\":\"#1\"}' 127.0.0.1:8080/x #a comment",
	}
	if !slices.Equal(got, want) {
		t.Errorf("README examples:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if body, ok := docSpec(md, "x"); !ok || !strings.HasPrefix(body, "name: x") {
		t.Errorf("docSpec(x) = %q, %v", body, ok)
	}

	root := &cobra.Command{Use: "bulkheadlab", Example: "  # one\n  bulkheadlab list\n\n  bulkheadlab size --rate 1 \\\n    --latency 1s   # two"}
	root.AddCommand(&cobra.Command{Use: "sub", Example: "  bulkheadlab sub"})
	got = nil
	for _, s := range helpSessions(root) {
		for _, ex := range s.examples {
			got = append(got, s.name+" "+ex.where+" "+ex.text)
		}
	}
	want = []string{
		"help/bulkheadlab bulkheadlab --help bulkheadlab list",
		"help/bulkheadlab bulkheadlab --help bulkheadlab size --rate 1 --latency 1s",
		"help/bulkheadlab_sub bulkheadlab sub --help bulkheadlab sub",
	}
	if !slices.Equal(got, want) {
		t.Errorf("help examples:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	cmds, err := parseLine(`curl -X PUT 127.0.0.1:8082/faults -d '{"faults":[]}'; curl -s "a b" | grep ^x_ &`)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range cmds {
		parts = append(parts, fmt.Sprintf("%q pipe=%v", c.args, c.pipe))
	}
	gotCmds := strings.Join(parts, "; ")
	if wantCmds := `["curl" "-X" "PUT" "127.0.0.1:8082/faults" "-d" "{\"faults\":[]}"] pipe=false; ["curl" "-s" "a b"] pipe=true; ["grep" "^x_"] pipe=false`; gotCmds != wantCmds {
		t.Errorf("parseLine = %s, want %s", gotCmds, wantCmds)
	}
	for _, bad := range []string{"echo $HOME", "bulkheadlab list > out", "ls *.go", "a | ", "echo 'x"} {
		if _, err := parseLine(bad); err == nil {
			t.Errorf("parseLine(%q): no error, want one (the test would not run it as written)", bad)
		}
	}
}

// TestDocumentedExitWithoutCheck: without --check, a command that wrote its
// report exits 0 whatever the verdicts, INVALID included, with a WARNING
// line; --check makes the same data exit 3. run --help and the exit codes
// of docs/ci.md say so (run and report share finishCheck).
func TestDocumentedExitWithoutCheck(t *testing.T) {
	repo := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "invalid")
	if err := copyTree(filepath.Join(repo, "results", "reference-breaker-after-drain"), dir); err != nil {
		t.Fatal(err)
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "meta.json"))
	if len(metas) == 0 {
		t.Fatal("no runs to mark INVALID")
	}
	for _, p := range metas {
		var m map[string]any
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		v := m["validity"].([]any)[0].(map[string]any)
		v["valid"], m["valid"] = false, false
		v["broken"] = []map[string]any{{"rule": "lag", "endpoint": v["endpoint"], "phase": v["phase"], "measured": 9e6, "limit": 5e6, "unit": "ns"}}
		if b, err = json.Marshal(m); err == nil {
			err = os.WriteFile(p, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	report := func(args ...string) (int, string) {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetArgs(append([]string{"report", dir, "--no-images"}, args...))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		return exitCode(err), out.String()
	}
	if code, out := report(); code != ExitOK || !strings.Contains(out, "WARNING: 4 of 4 runs are INVALID") {
		t.Errorf("report of INVALID runs without --check: exit %d, want 0 with a WARNING line:\n%s", code, out)
	}
	if code, out := report("--check"); code != ExitInvalid {
		t.Errorf("report --check of INVALID runs: exit %d, want %d:\n%s", code, ExitInvalid, out)
	}

	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ") }
	if h := norm(newRunCmd().Long); !strings.Contains(h, "Without --check, run exits 0 once the report is written, whatever its verdicts, INVALID included") {
		t.Errorf("run --help does not say what run exits without --check:\n%s", newRunCmd().Long)
	}
	ci, err := os.ReadFile(filepath.Join(repo, "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(norm(string(ci)), "Without --check, run and report exit 0 once the report is written, whatever its verdicts, INVALID included") {
		t.Errorf("the exit codes of docs/ci.md do not say what run exits without --check:\n%s", ci)
	}
}

// mdLink is a Markdown link or image outside code: its target.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// TestDocumentedLinks: every relative link of every page (README.md and
// docs/*.md) names a file of the repository from the page's own folder, and
// a #fragment into a page names one of its headings (GitHub's anchors), so
// that moving text between pages cannot leave a link behind.
func TestDocumentedLinks(t *testing.T) {
	repo := repoRoot(t)
	anchors := map[string]map[string]bool{} // page (slash path) → its anchors
	pages := docPages(t, repo)
	for _, p := range pages {
		anchors[p.file] = headingAnchors(p.text)
	}
	n := 0
	for _, p := range pages {
		for i, l := range proseLines(p.text) {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, frag, _ := strings.Cut(target, "#")
				rel := p.file
				if file != "" {
					rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.file), file)))
					if strings.HasPrefix(rel, "../") {
						t.Errorf("%s:%d: %s leaves the repository", p.file, i+1, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(rel))); err != nil {
						t.Errorf("%s:%d: %s: no %s", p.file, i+1, target, rel)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if a, ok := anchors[rel]; !ok {
					t.Errorf("%s:%d: %s: a #fragment into %s, which is not a page", p.file, i+1, target, rel)
				} else if !a[frag] {
					t.Errorf("%s:%d: %s: %s has no heading #%s", p.file, i+1, target, rel, frag)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d relative links: the collector is broken", n)
	}
}

// proseLines returns md's lines with those of fenced code blocks blanked.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		fence, _, ok := fenceOpen(lines[i])
		if !ok {
			continue
		}
		j := i
		for lines[j] = ""; j+1 < len(lines); {
			j++
			done := strings.HasPrefix(strings.TrimSpace(lines[j]), fence)
			lines[j] = ""
			if done {
				break
			}
		}
		i = j
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives md's headings: the text
// lower-cased, without punctuation, spaces as hyphens, a repeat suffixed -1,
// -2, ….
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(md) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l, "#"))
		a := strings.Map(func(r rune) rune {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				return unicode.ToLower(r)
			case r == ' ':
				return '-'
			}
			return -1
		}, title)
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
