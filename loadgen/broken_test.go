package loadgen

import (
	"slices"

	"github.com/bulkheadlab/bulkheadlab/internal/rundata"
)

// hasRule reports whether bs holds a break of rule.
func hasRule(bs []rundata.Broken, rule rundata.Rule) bool {
	return slices.ContainsFunc(bs, func(b rundata.Broken) bool { return b.Rule == rule })
}

// shardBroke reports whether bs holds a break of rule naming shard.
func shardBroke(bs []rundata.Broken, rule rundata.Rule, shard int) bool {
	return slices.ContainsFunc(bs, func(b rundata.Broken) bool { return b.Rule == rule && b.Shard != nil && *b.Shard == shard })
}
