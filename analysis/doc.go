// Package analysis reads run data written by the runner, computes the
// statistics and verdicts on the hypothesis (DESIGN §1), and renders PNG,
// Markdown, HTML and JSON reports.
package analysis
