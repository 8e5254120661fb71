package profiler

import "time"

// The environment variables the profiler reads. config.go and exporter.go
// are the only places that read them, always through an envconfig.Reader
// over the getenv function given to newConfig; the runtime rates'
// variables are named in their profile descriptors (internal/collect), and
// each exporter package reads its own.
const (
	envSDKDisabled        = "OTEL_SDK_DISABLED"
	envConfigFile         = "OTEL_CONFIG_FILE"
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"

	envEnabled       = "PPROFOTEL_ENABLED"
	envWindow        = "PPROFOTEL_WINDOW"
	envProfiles      = "PPROFOTEL_PROFILES"
	envProcessCtx    = "PPROFOTEL_PROCESS_CONTEXT"
	envMaxGoroutines = "PPROFOTEL_MAX_GOROUTINES"
	envCPUDutyCycle  = "PPROFOTEL_CPU_DUTY_CYCLE"
	envSlowThreshold = "PPROFOTEL_SLOW_REQUEST_THRESHOLD"
	envMaxRoutes     = "PPROFOTEL_MAX_ROUTES"
)

// envPrefix starts the name of every variable of the module's own.
const envPrefix = "PPROFOTEL_"

// Defaults.
const (
	defaultWindow = 60 * time.Second

	// defaultCPUDuty is the share of each window, in percent, that the
	// CPU profile records unless WithCPUDutyCycle says otherwise: about a
	// sixth, 10.2s of the default 60s. Almost all that CPU profiling
	// costs is the runtime's sampling while the profile records, so the
	// cost falls with the share.
	defaultCPUDuty = 17

	// defaultStopTimeout bounds Stop when its context has no deadline:
	// long enough for a reachable receiver to take the last windows, short
	// enough that a service's exit is not held by one that cannot be
	// reached (the exporters' retries would otherwise go on for a minute).
	defaultStopTimeout = 5 * time.Second
)
