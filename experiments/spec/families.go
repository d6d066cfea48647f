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

// families are run in this order by validate, Warnings and
// matrixProblems, so their messages come out in it; a new family is one
// entry here.
var families = []family{
	{name: "service", validate: (*Spec).validateService, warnings: (*Spec).bulkheadWarnings},
	{name: "sizing", matrix: (*Spec).validateSizing},
	{name: "conns", warnings: (*Spec).connectionWarnings, matrix: (*Spec).validateConnsClaims},
	{name: "dependencies", validate: (*Spec).validateDeps},
	{name: "load", validate: (*Spec).validateLoad},
	{name: "phases", validate: (*Spec).validatePhases},
	{name: "conditions", validate: (*Spec).validateConditions},
	{name: "postgres", validate: func(s *Spec, p *problems) {
		s.validatePostgresConditions(p)
		s.validatePostgresEndpoints(p)
	}},
	{name: "classes", validate: (*Spec).validateClasses},
	{name: "aftermath", validate: (*Spec).validateAftermath, warnings: (*Spec).aftermathWarnings},
	{name: "arrivals", warnings: (*Spec).arrivalsWarnings},
	{name: "scale", warnings: (*Spec).phaseWarnings},
	{name: "modes", validate: (*Spec).validateModes},
	{name: "fleet", validate: (*Spec).validateInstances, matrix: (*Spec).validateFleet},
	{name: "clients", validate: (*Spec).validateClients},
	{name: "expectations", validate: (*Spec).validateExpectations},
	{name: "policy", validate: (*Spec).validatePolicyClaims},
	{name: "cpu", validate: (*Spec).validateCPU},
	{name: "priority", validate: (*Spec).validatePriority, warnings: (*Spec).priorityWarnings},
	{name: "nopool", validate: (*Spec).validateNoPool},
	{name: "tenants", validate: (*Spec).validateTenants, warnings: (*Spec).tenantWarnings},
	{name: "jobs", validate: (*Spec).validateJobs, warnings: (*Spec).jobsWarnings},
	{name: "processes", validate: (*Spec).validateProcesses},
	{name: "validity", validate: (*Spec).validateValidity},
	{name: "audit", validate: (*Spec).validateAudit},
	{name: "external", validate: func(s *Spec, p *problems) {
		if s.External != nil {
			s.validateExternal(p)
		}
	}, warnings: (*Spec).externalWarnings},
}

// matrixProblems reports the problems of the whole matrix into p.
func matrixProblems(s *Spec, p *problems) {
	for _, f := range families {
		if f.matrix != nil {
			f.matrix(s, p)
		}
	}
}
