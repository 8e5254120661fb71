package profiler

import "github.com/pprofotel/profiler/internal/version"

// Version is the version of this module. It is reported as
// telemetry.sdk.version on the resource and in the User-Agent of OTLP
// requests ("pprofotel-go/" + Version).
const Version = version.Version
