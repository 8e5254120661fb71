package profiler

// otherVariables are the module's variables that other packages read:
// the file exporter's and remote control's (package opamp).
var otherVariables = []string{
	"PPROFOTEL_FILE_DIR", "PPROFOTEL_FILE_FORMAT", "PPROFOTEL_FILE_MAX_FILES", "PPROFOTEL_FILE_MAX_BYTES",
	"PPROFOTEL_OPAMP_ENDPOINT", "PPROFOTEL_OPAMP_HEADERS", "PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL",
}

// devVariables are read by the repository's tests and tools, never by the
// profiler: not warned about, and never suggested.
var devVariables = []string{
	"PPROFOTEL_OTELCOL", "PPROFOTEL_PYROSCOPE",
	"PPROFOTEL_INTEGRATION_LOAD", "PPROFOTEL_INTEGRATION_REFERENCE_CPU_PROFILE",
}

// knownVariables returns every PPROFOTEL_ variable the module reads.
func knownVariables() []string {
	known := []string{
		envEnabled, envWindow, envProfiles, envProcessCtx,
		envMaxGoroutines, envCPUDutyCycle, envSlowThreshold, envMaxRoutes,
	}
	for t := range ProfileType(numProfileTypes) {
		d := t.descriptor()
		if d.Rate != nil {
			known = append(known, d.Rate.Env)
		}
		if d.Interval != nil {
			known = append(known, d.Interval.Env)
		}
	}
	return append(known, otherVariables...)
}
