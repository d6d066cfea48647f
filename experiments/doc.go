// Package experiments holds experiment specs (YAML), their validation and
// matrix expansion, the embedded presets, and the runner that starts the
// components, drives load and faults, and writes the results folder.
package experiments
