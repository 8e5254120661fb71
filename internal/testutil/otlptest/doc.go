// Package otlptest checks and decodes the OTLP profiles requests built by
// package otlp, for use in tests across the module.
//
// Validate is a strict checker of the rules of the v1development profiles
// format, plus the conventions of this module: every Sample has exactly one
// value (each pprof sample type is its own Profile), samples with a zero value
// are left out, and every ScopeProfiles carries the pprof.scope.* and
// pprofotel.profile.name attributes. StackTotals reduces a pprof profile (as
// package pprofconv rebuilds it from a request) to per-stack totals, so that
// tests can compare what was sent with what the runtime reported.
//
// The package is meant to be imported from _test.go files only.
package otlptest
