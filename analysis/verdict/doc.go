// Package verdict judges the hypothesis across runs: it groups run
// summaries into cells (condition × mode), decides each prediction with the
// builder (SUPPORTED, NOT SUPPORTED, INCONCLUSIVE, INVALID, SKIPPED), one
// file a claim family (predictions.go for P1–P4, FAILFAST and EXHAUSTED;
// aftermath, policy, sizing, conns, cpu, fleet), and says how many repeats
// each needed, what the reader must know first, and what --check concludes.
// Its result is the Summary, summary.json.
package verdict
