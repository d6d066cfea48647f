//go:build e2e

package main

import (
	"testing"

	"github.com/bulkheadlab/bulkheadlab/analysis/verdict"
)

// TestAuditTenantSurge audits the built-in service's tenants as load
// classes: /noisy and /quiet are one path told apart by X-Tenant, and a
// condition of the spec's own raises /noisy's rate with every
// dependency healthy — a column of load, whose cause is /noisy. With one
// pool of 16 for both tenants (mode shared) /quiet is refused: a finding
// "/quiet degraded when the load of /noisy rose", and --check fails as
// /quiet is critical; with partitions of 8 and 6 (mode
// partitioned) /quiet is ISOLATED while /noisy, its own load's cause, is
// EXPECTED.
func TestAuditTenantSurge(t *testing.T) {
	binary(t)
	code, out, dir := runAudit(t, "tenant-audit", `name: tenant-audit
seed: 7
service: {timeout: 250ms, pool_size: 16, queue: 0}
endpoints:
  - {name: noisy, dependency: A, path: work, headers: {X-Tenant: noisy}}
  - {name: quiet, dependency: A, path: work, headers: {X-Tenant: quiet}}
dependencies:
  A: {latency: 20ms, jitter: 2ms}
load: {rates: {noisy: 30, quiet: 50}}
phases: {warmup: 1s, baseline: 1s, fault: 2s, recovery: 500ms}
conditions:
  - healthy
  - {name: batch, rates: {noisy: 1000}}
modes:
  - {name: shared, tenants: {mode: shared}}
  - {name: partitioned, pools: shared, tenants: {mode: partitioned, partitions: {noisy: 8, quiet: 6}, other: 2}}
audit:
  critical: [quiet]
  calibration: {requests: 10, rate: 40}
`)
	if code != ExitFailed {
		t.Fatalf("audit --check: exit %d, want %d (/quiet is critical and not isolated in the shared pool); output:\n%s", code, ExitFailed, out)
	}
	sum := readSummary(t, dir)
	if len(sum.Audits) != 2 {
		t.Fatalf("%d audit maps, want one per mode", len(sum.Audits))
	}
	for _, m := range sum.Audits {
		if len(m.Columns) != 1 || m.Columns[0].Target() != "load of /noisy" {
			t.Fatalf("%s: columns %+v, want one: the load of /noisy", m.Mode, m.Columns)
		}
		cells := map[string]verdict.AuditCell{}
		for i, e := range m.Endpoints {
			cells[e] = m.Cells[i][0]
			t.Logf("%s: /%s × load of /noisy: %s, p99 %v → %v ms, errors %.3f", m.Mode, e, cells[e].Class,
				cells[e].BaselineP99Ms, cells[e].FaultP99Ms, float64(cells[e].ErrorRate))
		}
		for _, f := range m.Findings {
			t.Logf("%s: %s", m.Mode, f.Summary)
		}
		if c := cells["noisy"]; c.Class != verdict.CellExpected {
			t.Errorf("%s: /noisy × its own surge %s, want %s", m.Mode, c.Class, verdict.CellExpected)
		}
		want := verdict.CellIsolated
		if m.Mode == "shared" {
			want = verdict.CellDegraded
		}
		if c := cells["quiet"]; c.Class != want {
			t.Errorf("%s: /quiet × the load of /noisy %s, want %s", m.Mode, c.Class, want)
		}
		if (len(m.Findings) > 0) != (m.Mode == "shared") {
			t.Errorf("%s: %d findings", m.Mode, len(m.Findings))
		}
	}
}
