// Package opamp lets an OpAMP server (Open Agent Management Protocol)
// change what a running profiler collects, without a redeploy: turn the
// off-CPU profile on at 50 % for the next 15 minutes during an incident,
// say, after which the local configuration returns by itself.
//
// It is opt-in: only a program that imports it links opamp-go and its
// WebSocket library. Start connects a running *profiler.Profiler to the
// server as an agent, over WebSocket (a ws or wss URL) or plain HTTP (http
// or https), and returns at once; Shutdown disconnects.
//
// # What the server sees
//
// The agent description is the profiler's resource: service.name,
// service.namespace, service.version and service.instance.id identify the
// agent (the client's instance id stands in for a missing
// service.instance.id); the rest, telemetry.sdk.* among them, describe
// it. The effective configuration is a JSON file named "pprofotel", in the
// form of a remote configuration with every key set, and, once a remote
// configuration was accepted, a file "pprofotel.remote" with its hash,
// when it expires and whether it did. The health is "running", "paused"
// or "stopped", with a component "exporter" that counts the windows
// collected, exported, failed, dropped and queued (profiler.Stats) and is
// unhealthy when windows failed or were dropped since the previous report.
// A profiler stopped by its application is "stopped" and healthy, unless
// its last windows failed.
//
// # Remote configuration
//
// The server sends one file, named "pprofotel" in the AgentConfigMap (or
// unnamed, "", as servers that keep one file per agent send it), holding
// one JSON object (content type application/json or none). Every
// key is optional; an absent key keeps the local value, and an empty file
// or an empty map returns the local configuration:
//
//	{
//	  "enabled": true,                   // false pauses: no window is collected or sent
//	  "profiles": ["cpu", "heap", "goroutine", "offcpu"],
//	  "window": "60s",                   // profiler.WithWindow
//	  "cpu_duty_cycle": 17,              // profiler.WithCPUDutyCycle, percent
//	  "offcpu_duty_cycle": 50,           // profiler.WithOffCPUDutyCycle, percent
//	  "mutex_profile_fraction": 10,      // profiler.WithMutexProfileFraction
//	  "block_profile_rate": 10000,       // profiler.WithBlockProfileRate, nanoseconds
//	  "max_goroutines": 10000,           // profiler.WithMaxGoroutines
//	  "goroutineleak_interval": "5m",    // profiler.WithGoroutineLeakInterval
//	  "expires_in": "15m"                // the local configuration returns after it
//	}
//
// (JSON has no comments; they say here what each key is.) A configuration
// is refused whole, and the settings stay as they were, when it has
// another file or an unknown key, is not one JSON object, exceeds
// MaxConfigBytes, sets a value beyond the local bounds below, or sets one
// the profiler's options refuse: the values are validated by the very
// code that validates the options at profiler.Start, whose error is the
// reason. The refusal goes back to the server as the RemoteConfigStatus
// FAILED with the reason; an accepted configuration is APPLYING until it
// takes effect, then APPLIED. A configuration resent with the same hash,
// as a server does when the client reconnects, is not applied again: its
// expiry runs from when it was first accepted.
//
// A change takes effect at the profiler's next window boundary: the window
// that ends there is sent whole with the settings it began with, the next
// begins at the same instant with the new ones, and the exporter is not
// restarted. A change, an expiry and Shutdown wait for no more than one
// window of the local length, whatever the window in effect: a longer one
// is cut short. A configuration changes only the settings it names; every
// other setting, those it cannot reach (profiler.WithMaxRoutes,
// profiler.WithSlowRequestThreshold...) included, keeps the value the
// application gave by option or environment, and the local settings come
// back exactly at its expiry and at Shutdown. The off-CPU profile can be turned on only in a program that
// links it (import _ "github.com/pprofotel/profiler/offcpu").
//
// # Local bounds
//
// Values a remote configuration may not exceed, whatever the server, so
// that a careless or compromised one cannot take over a service's CPU or
// hold its windows back: CPU and off-CPU duty cycles from 1 to 50 %
// (WithMaxCPUDutyCycle, WithMaxOffCPUDutyCycle), a window from 10s
// (WithMinWindow) to 5m (WithMaxWindow), a mutex profile fraction from 5
// (WithMinMutexProfileFraction) to 1,000,000, a block profile rate from
// 1µs (WithMinBlockProfileRate) to 1s, a goroutine guard from 1 to 10,000
// and never "no limit" (WithMaxGoroutineGuard), a goroutine-leak interval
// from a minute (WithMinGoroutineLeakInterval) to 24h, and an expiry above
// 0 and at most 24h (WithMaxExpiry). They bound what the server sets, not
// the local configuration.
//
// A redirect from the server is followed only to the endpoint's own scheme
// and host (ws and http, wss and https counting as one): never from TLS to
// cleartext, never to another host, so that the headers go nowhere else.
// A refused redirect fails the attempt and is logged; the client tries its
// endpoint again.
//
// # A server down, slow or hostile
//
// The profiler never waits on the client: a change is handed to it and
// applied by its own loop. opamp-go reconnects with exponential backoff
// (from half a second up to a minute between attempts, honouring a
// server's Retry-After); the client warns once per outage. opamp-go
// v0.22.0 reads each message from the server whole and lets an agent set
// no limit on its size, so the limit is on what the profiler accepts:
// MaxConfigBytes of configuration, one file. Shutdown returns the local
// configuration and waits for opamp-go no longer than its context allows.
//
// # Environment variables
//
// OpenTelemetry has specified no variables for OpAMP: its declarative
// configuration's opamp node is still a development proposal, and the
// distributions that ship OpAMP clients each use their own prefix
// before a common shape, _OPAMP_ENDPOINT, _OPAMP_HEADERS and a heartbeat
// or polling interval (ELASTIC_OTEL_OPAMP_ENDPOINT in Elastic's, Splunk's
// and the PHP distribution's under their prefixes). The package follows
// that shape under the profiler's own prefix, and options win over it:
//
//   - PPROFOTEL_OPAMP_ENDPOINT: the server's URL (WithEndpointURL); by
//     default ws://localhost:4320/v1/opamp.
//   - PPROFOTEL_OPAMP_HEADERS: headers as key=value pairs separated by
//     commas, values percent-encoded, as in the OTLP exporters' HEADERS
//     variables (WithHeaders).
//   - PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL: a Go duration such as 30s, at
//     least 1s (WithHeartbeatInterval); over plain HTTP, the polling
//     interval.
//
// A variable that cannot be read is warned about once and ignored, as the
// OpenTelemetry specification asks. A private CA or a client certificate
// is WithTLSClientConfig's: no variable names TLS files yet, since reading
// them as the OTLP exporters do would grow the code every program links.
package opamp
