// Package validutf8 makes the strings the profiler sends valid UTF-8.
//
// proto3 requires every string field to hold valid UTF-8, and protobuf
// encoders (protobuf-go, protojson, a Collector decoding the request)
// refuse a message with one that does not. The strings the profiler sends
// come from the application (pprof label keys and values), the environment
// (OTEL_RESOURCE_ATTRIBUTES) and the binary (function and file names, which
// are the bytes the compiler saw): one invalid byte among them would cost
// the whole request, every window, for as long as the string is around. So
// each string is repaired, once, where it enters the request's string
// tables or the resource, and the repairs are counted.
package validutf8

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Replacement is what each run of invalid bytes becomes: U+FFFD, the
// Unicode replacement character.
const Replacement = "\uFFFD"

// Repairs repairs strings and counts those it had to change.
type Repairs struct {
	// N counts the strings that were not valid UTF-8.
	N int64
	// First is the first of them, as repaired, for a log message that
	// helps find where it came from (cut it with Clip).
	First string
}

// String returns s if it is valid UTF-8, and otherwise s with each run of
// invalid bytes replaced by Replacement, as strings.ToValidUTF8 does,
// counting it. Valid strings, nearly all of them, cost one
// utf8.ValidString and are returned as they are.
func (r *Repairs) String(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, Replacement)
	if r.N == 0 {
		r.First = s
	}
	r.N++
	return s
}

// Add counts into r what o counted.
func (r *Repairs) Add(o Repairs) {
	if r.N == 0 {
		r.First = o.First
	}
	r.N += o.N
}

// LogLimit is the most bytes of a string from outside the profiler (the
// application's labels, an environment variable) that a log message shows,
// cut by Clip.
const LogLimit = 128

// Clip returns s if it is at most max bytes long, and otherwise its first
// max bytes or fewer, cut at a character boundary, followed by
// "…(N bytes)", N being len(s): a log must not carry a megabyte that an
// application or an operator put in a string, yet must say that it was
// cut and how long the string was.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
