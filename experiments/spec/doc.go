// Package spec is the experiment spec: the YAML model, its strict decoding
// with file:line: field errors, defaults, validation (with the service's and
// the fault proxy's own rules), the embedded presets, Little's-law previews,
// and the expansion of the matrix into the runner's typed plan
// (package plan). It starts nothing and measures nothing.
package spec
