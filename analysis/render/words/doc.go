// Package words says in English what the run data hold as numbers and
// ids: the sentence of each broken validity rule (Reason), its name in a
// report (Name), its measured value against the limit (NumbersOf, Short),
// a run's breaks rule by rule (Groups), and the number formats every
// output shares (Fmt3, FmtHuman, FmtDuration).
//
// It is the one place a validity record (rundata.Broken) becomes words: a
// leaf that imports only internal/rundata, so that measure, verdict and
// render say a record alike, and the runner's progress says it as the
// report does, without importing the analysis. Nothing reads these words
// back: whatever needs a rule's numbers reads the record.
package words
