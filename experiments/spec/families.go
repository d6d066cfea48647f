package spec

// family is one kind of setting a spec may hold, with its checks: validate
// reports its problems in a resolved spec, warnings what a valid spec of
// it may not mean, and matrix its problems that only the whole matrix
// shows (a sweep's points combined: run once on the spec Parse returns).
// Any of the three may be nil.
type family struct {
	name     string
	validate func(s *Spec, p *problems)
	warnings func(s *Spec) []string
	matrix   func(s *Spec, p *problems)
}

// part is a family's view of a spec: a struct of one *Spec, whose methods
// are that family's checks and configuration.
type part interface{ ~struct{ *Spec } }

// check makes a part's check an entry of the list.
func check[P part](f func(P, *problems)) func(*Spec, *problems) {
	return func(s *Spec, p *problems) { f(P{s}, p) }
}

// warn makes a part's warnings an entry of the list.
func warn[P part](f func(P) []string) func(*Spec) []string {
	return func(s *Spec) []string { return f(P{s}) }
}

// families are run in this order by validate, Warnings and
// matrixProblems, so their messages come out in it; a new family is one
// entry here.
var families = []family{
	{name: "service", validate: check(servicePart.validateService), warnings: warn(servicePart.bulkheadWarnings)},
	{name: "sizing", matrix: check(sizingPart.validateSizing)},
	{name: "conns", warnings: warn(connsPart.connectionWarnings), matrix: check(connsPart.validateConnsClaims)},
	{name: "dependencies", validate: check(endpointsPart.validateDeps)},
	{name: "load", validate: check(loadPart.validateLoad)},
	{name: "phases", validate: check(loadPart.validatePhases)},
	{name: "conditions", validate: check(matrixPart.validateConditions)},
	{name: "postgres", validate: check(postgresPart.validatePostgres)},
	{name: "classes", validate: check(classesPart.validateClasses)},
	{name: "aftermath", validate: check(aftermathPart.validateAftermath), warnings: warn(aftermathPart.aftermathWarnings)},
	{name: "arrivals", warnings: warn(arrivalsPart.arrivalsWarnings)},
	{name: "scale", warnings: warn(scalePart.phaseWarnings)},
	{name: "modes", validate: check(matrixPart.validateModes)},
	{name: "fleet", validate: check(fleetPart.validateInstances), matrix: check(fleetPart.validateFleet)},
	{name: "clients", validate: check(clientsPart.validateClients)},
	{name: "expectations", validate: check(expectationsPart.validateExpectations)},
	{name: "policy", validate: check(policyPart.validatePolicyClaims)},
	{name: "cpu", validate: check(cpuPart.validateCPU)},
	{name: "priority", validate: check(priorityPart.validatePriority), warnings: warn(priorityPart.priorityWarnings)},
	{name: "nopool", validate: check(noPoolPart.validateNoPool)},
	{name: "tenants", validate: check(tenantsPart.validateTenants), warnings: warn(tenantsPart.tenantWarnings)},
	{name: "jobs", validate: check(jobsPart.validateJobs), warnings: warn(jobsPart.jobsWarnings)},
	{name: "processes", validate: check(processesPart.validateProcesses)},
	{name: "validity", validate: check(validityPart.validateValidity)},
	{name: "audit", validate: check(auditPart.validateAudit)},
	{name: "external", validate: check(externalPart.validateExternal), warnings: warn(externalPart.externalWarnings)},
}

// matrixProblems reports the problems of the whole matrix into p.
func matrixProblems(s *Spec, p *problems) {
	for _, f := range families {
		if f.matrix != nil {
			f.matrix(s, p)
		}
	}
}
