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

// Resolve loads arg as a spec file when a file of that name exists or it
// ends in .yaml/.yml, and as a preset name otherwise.
func Resolve(arg string) (*Spec, error) {
	if _, err := os.Stat(arg); err == nil || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return Load(arg)
	}
	return Preset(arg)
}
