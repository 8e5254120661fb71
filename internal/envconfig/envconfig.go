// Package envconfig reads configuration from environment variables, typed,
// for the profiler's own variables, the OTLP exporter's and Splunk's alike,
// and holds the endpoint forms that variables and options share.
//
// Every message about a variable names it and its value:
// NAME="value": reason. Every invalid value goes through Reader.Invalid,
// the one place that applies the rule for invalid values. Today an invalid
// value is an error that makes Start fail.
package envconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables through a getenv function and collects the
// errors of invalid values. A variable set to an empty or all-blank value
// counts as unset, as the OpenTelemetry specification asks.
type Reader struct {
	getenv func(string) string
	// prefix starts every error message, e.g. "profiler: ".
	prefix string
	errs   []error
}

// New returns a Reader over getenv whose errors start with prefix.
func New(getenv func(string) string, prefix string) *Reader {
	return &Reader{getenv: getenv, prefix: prefix}
}

// Lookup returns name's trimmed value, and whether it is set to a
// non-blank value.
func (r *Reader) Lookup(name string) (string, bool) {
	v := strings.TrimSpace(r.getenv(name))
	return v, v != ""
}

// First returns the first of names that is set, with its value.
func (r *Reader) First(names ...string) (name, value string, ok bool) {
	for _, n := range names {
		if v, ok := r.Lookup(n); ok {
			return n, v, true
		}
	}
	return "", "", false
}

// Invalid records that name's value is not valid and why. It is the one
// place that decides what an invalid value does: the OpenTelemetry
// specification's rule lives here and nowhere else.
func (r *Reader) Invalid(name, value string, err error) {
	r.errs = append(r.errs, fmt.Errorf("%s%s=%q: %w", r.prefix, name, value, err))
}

// Fail records an error that involves more than one variable.
func (r *Reader) Fail(err error) {
	r.errs = append(r.errs, fmt.Errorf("%s%w", r.prefix, err))
}

// Errs returns the errors recorded so far.
func (r *Reader) Errs() []error { return r.errs }

// Bool reads the first of names that is set as "true" or "false", in any
// case. It reports false, false when none is set or the value is invalid.
func (r *Reader) Bool(names ...string) (value, ok bool) {
	name, v, set := r.First(names...)
	if !set {
		return false, false
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true, true
	case strings.EqualFold(v, "false"):
		return false, true
	}
	r.Invalid(name, v, errors.New(`value must be "true" or "false"`))
	return false, false
}

// PositiveInt reads name as an integer greater than zero; want says what
// a valid value is.
func (r *Reader) PositiveInt(name, want string) (int, bool) {
	return r.IntAtLeast(name, 1, want)
}

// IntAtLeast reads name as an integer no less than least; want says what
// a valid value is.
func (r *Reader) IntAtLeast(name string, least int, want string) (int, bool) {
	v, ok := r.Lookup(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		r.Invalid(name, v, errors.New(want))
		return 0, false
	}
	return n, true
}

// Duration reads name as a positive Go duration ("30s", "2m"); what names
// the quantity in messages.
func (r *Reader) Duration(name, what string) (time.Duration, bool) {
	v, ok := r.Lookup(name)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		r.Invalid(name, v, err)
	case d <= 0:
		r.Invalid(name, v, fmt.Errorf("%s must be positive", what))
	default:
		return d, true
	}
	return 0, false
}

// Millis reads the first of names that is set as a whole number of
// milliseconds, at least least (at least 1 ms when least is 0); what names
// the quantity in messages.
func (r *Reader) Millis(what string, least time.Duration, names ...string) (time.Duration, bool) {
	name, v, ok := r.First(names...)
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		r.Invalid(name, v, fmt.Errorf("%s must be an integer number of milliseconds", what))
	case least > 0 && ms < least.Milliseconds():
		r.Invalid(name, v, fmt.Errorf("%s must be at least %d milliseconds", what, least.Milliseconds()))
	case ms <= 0:
		r.Invalid(name, v, fmt.Errorf("%s must be a positive number of milliseconds", what))
	case ms > int64(time.Duration(1<<63-1)/time.Millisecond):
		r.Invalid(name, v, fmt.Errorf("%s is too large", what))
	default:
		return time.Duration(ms) * time.Millisecond, true
	}
	return 0, false
}

// Enum reads the first of names that is set as one of valid, in any case,
// and returns it in valid's spelling; what names the setting in messages.
func (r *Reader) Enum(what string, valid []string, names ...string) (string, bool) {
	name, v, ok := r.First(names...)
	if !ok {
		return "", false
	}
	for _, s := range valid {
		if strings.EqualFold(v, s) {
			return s, true
		}
	}
	r.Invalid(name, v, errors.New(OneOf(what, valid)))
	return "", false
}

// OneOf spells the rule an enumerated setting follows, for messages:
// `exporter must be "otlp", "file", "none" or "splunk"`.
func OneOf(what string, valid []string) string {
	quoted := make([]string, len(valid))
	for i, s := range valid {
		quoted[i] = strconv.Quote(s)
	}
	list := quoted[0]
	if n := len(quoted); n > 1 {
		list = strings.Join(quoted[:n-1], ", ") + " or " + quoted[n-1]
	}
	return what + " must be " + list
}

// KeyValue is one entry of a key=value list.
type KeyValue struct{ Key, Value string }

// KeyValues reads the first of names that is set in the list format shared
// by OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS.
func (r *Reader) KeyValues(names ...string) ([]KeyValue, bool) {
	name, v, ok := r.First(names...)
	if !ok {
		return nil, false
	}
	kvs, err := ParseKeyValues(v)
	if err != nil {
		r.Invalid(name, v, err)
		return nil, false
	}
	return kvs, true
}

// ParseKeyValues parses "key=value" entries separated by commas, as in W3C
// Baggage without properties. Values are percent-decoded; blanks around
// keys and values are dropped; empty entries are skipped. Keys are kept in
// order; a repeated key is kept twice and the last one wins where the
// entries are collected into a set.
func ParseKeyValues(s string) ([]KeyValue, error) {
	var kvs []KeyValue
	for entry := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q is not key=value", strings.TrimSpace(entry))
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, fmt.Errorf("entry %q has an empty key", strings.TrimSpace(entry))
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("value of %q is not percent-encoded correctly: %w", k, err)
		}
		kvs = append(kvs, KeyValue{k, decoded})
	}
	return kvs, nil
}
