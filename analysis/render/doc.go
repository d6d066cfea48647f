// Package render writes what a Summary says: summary.json, report.md,
// index.html, the JUnit file, the console table and the figures (PNG); and
// what a blast-radius audit's map says: audit.json, audit.md, audit.html,
// its console table and the heatmap audit-map.png. It is the only package
// of the analysis that draws (gonum/plot).
package render
