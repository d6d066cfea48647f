// Package claims is the registry of the verdicts: every claim's name, its
// family, and what it needs of an experiment to be decided — the sections
// of the expectations that must name its runs, the roles of the cells it
// compares, and what of the service it must see. The spec reads it to say
// which claims a matrix can decide (validate, the default check list) and
// the analysis to choose which verdicts it judges and on which cells; the
// decisions and their texts live in analysis/verdict, one registration per
// claim there too. It imports nothing of the project, so the run-data
// contract (internal/rundata), the spec and the analysis can all name a
// claim by its constant.
package claims
