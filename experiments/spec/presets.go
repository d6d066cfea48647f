package spec

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

//go:embed presets/*.yaml
var presetFS embed.FS

// DefaultPreset is the experiment `bulkheadlab run` runs without arguments.
const DefaultPreset = "slow-dependency"

// ErrUnknownPreset is returned by Preset for a name that is not embedded.
var ErrUnknownPreset = errors.New("unknown preset")

// PresetInfo names and describes one embedded preset.
type PresetInfo struct {
	Name        string
	Description string
}

// PresetNames returns the names of the embedded presets, sorted.
func PresetNames() []string {
	entries, _ := fs.Glob(presetFS, "presets/*.yaml")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(path.Base(e), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// PresetSource returns the YAML text of the named preset.
func PresetSource(name string) ([]byte, error) {
	b, err := presetFS.ReadFile("presets/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("%w %q (presets: %s)", ErrUnknownPreset, name, strings.Join(PresetNames(), ", "))
	}
	return b, nil
}

// Preset loads the named embedded preset; errors name it "<name>.yaml".
func Preset(name string) (*Spec, error) {
	b, err := PresetSource(name)
	if err != nil {
		return nil, err
	}
	return Parse(name+".yaml", b)
}

// Presets lists every embedded preset with its description. A preset that
// does not parse is listed with the error as its description.
func Presets() []PresetInfo {
	var out []PresetInfo
	for _, n := range PresetNames() {
		info := PresetInfo{Name: n}
		if s, err := Preset(n); err != nil {
			info.Description = "INVALID: " + err.Error()
		} else {
			info.Description = s.Description
		}
		out = append(out, info)
	}
	return out
}

// ErrAmbiguous is returned by Resolve for a bare name that is both a
// preset and a file in the working directory.
var ErrAmbiguous = errors.New("ambiguous spec name")

// Resolve loads arg as a spec file when it looks like a path (it holds a
// path separator or ends in .yaml/.yml), and as an embedded preset when it
// is a bare name. A bare name that is a preset and also a file here is
// refused as ambiguous (write ./name to mean the file); a bare name that is
// only a file loads the file.
func Resolve(arg string) (*Spec, error) {
	if strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, os.PathSeparator) ||
		strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return Load(arg)
	}
	_, statErr := os.Stat(arg)
	_, presetErr := PresetSource(arg)
	switch {
	case statErr == nil && presetErr == nil:
		return nil, fmt.Errorf("%w %q: it is an embedded preset and a file here; write ./%s for the file", ErrAmbiguous, arg, arg)
	case statErr == nil:
		return Load(arg)
	}
	return Preset(arg)
}
