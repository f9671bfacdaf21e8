package runner

// Exported for the external tests.
var (
	CreateOptions = createOptions
	WorkloadUser  = workloadUser
)
