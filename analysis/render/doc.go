// Package render writes what a Summary says: summary.json, report.md,
// index.html, the JUnit file, the console table and the figures (PNG). It
// is the only package of the analysis that draws (gonum/plot).
package render
