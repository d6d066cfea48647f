// Package rundata is the run-data contract between the runner, which writes
// a results folder, and the analysis, which reads it (docs/design.md §4 "Run data"):
// the folder layout and file names, the records of each file, the result
// classes, the validity rules a run can break (Broken: numbers and ids,
// never words), metric sample keys, and the expectations the verdicts use
// (with the names they give each claim's roles and sections). It imports
// nothing of the project but the claims' registry (internal/claims, itself
// a leaf), so both sides can depend on it without depending on each other.
// Fields may be added to a record; none may change meaning.
package rundata
