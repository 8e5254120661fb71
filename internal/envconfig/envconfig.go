// Package envconfig reads configuration from environment variables, typed,
// for the profiler's own variables, the OTLP exporter's and Splunk's alike,
// and holds the route forms that variables and options share.
//
// Every message about a variable names it and its value:
// NAME="value": reason; what is done instead. A value longer than
// validutf8.LogLimit bytes is cut, and the values of lists that may hold
// credentials (the HEADERS variables, List.Secret) are not shown at all.
// The Reader is the one place that applies the rule for invalid values,
// which is the OpenTelemetry specification's (Environment Variable
// Specification, and the otel-go SDK's reading of it): an invalid value is warned about, once, and
// ignored, as if unset, so that the next variable in line or the default
// applies (Reader.Invalid); a boolean that is not "true" reads as false
// (Reader.Bool); a list keeps the entries it can read (Reader.KeyValues).
// A value never makes Start fail.
package envconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pprofotel/profiler/internal/validutf8"
)

// Reader reads variables through a getenv function and collects warnings
// about invalid values, each once. A variable set to an empty or
// all-blank value counts as unset, as the OpenTelemetry specification
// asks.
type Reader struct {
	getenv func(string) string
	// prefix starts every warning, e.g. "profiler: ".
	prefix   string
	warnings []error
	// warned holds the text of every warning recorded, so that a variable
	// read twice (the INSECURE flag by two route forms) warns once.
	warned map[string]bool
}

// New returns a Reader over getenv whose warnings start with prefix.
func New(getenv func(string) string, prefix string) *Reader {
	return &Reader{getenv: getenv, prefix: prefix}
}

// Lookup returns name's trimmed value, and whether it is set to a
// non-blank value. When name is not set and an old name of it is still
// read (Renames), the old name's value stands for it; CheckNames warns
// about the old name.
func (r *Reader) Lookup(name string) (string, bool) {
	_, v, ok := r.lookup(name)
	return v, ok
}

// lookup is Lookup, and returns the name read too: name or its old name.
func (r *Reader) lookup(name string) (read, value string, ok bool) {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return name, v, true
	}
	if old, ok := oldName(name); ok {
		if v := strings.TrimSpace(r.getenv(old)); v != "" {
			return old, v, true
		}
	}
	return "", "", false
}

// First returns the first of names that is set, with its value; the name
// returned is the old one when the old name's value stands in (Lookup).
func (r *Reader) First(names ...string) (name, value string, ok bool) {
	for _, n := range names {
		if read, v, ok := r.lookup(n); ok {
			return read, v, true
		}
	}
	return "", "", false
}

// Invalid records that name's value is not valid, why, and that it is
// ignored. It is the one place that decides what an invalid value does.
func (r *Reader) Invalid(name, value string, err error) {
	r.Warn(fmt.Errorf("%s=%q: %w; ignored", name, value, err))
}

// Warn records a warning about the configuration, e.g. one that involves
// more than one variable. A warning recorded before is not recorded again.
// Every quoted string in it longer than validutf8.LogLimit bytes is cut
// (see clipQuoted).
func (r *Reader) Warn(err error) {
	err = fmt.Errorf("%s%w", r.prefix, err)
	if msg := err.Error(); len(msg) > validutf8.LogLimit {
		if clipped := clipQuoted(msg); clipped != msg {
			err = errors.New(clipped)
		}
	}
	if r.warned[err.Error()] {
		return
	}
	if r.warned == nil {
		r.warned = make(map[string]bool)
	}
	r.warned[err.Error()] = true
	r.warnings = append(r.warnings, err)
}

// clipQuoted cuts every Go-quoted string in msg whose text is longer than
// validutf8.LogLimit bytes to its first LogLimit bytes and "…(N bytes)", N
// being the whole text's length (validutf8.Clip). A variable can hold a
// megabyte (a file pasted in by mistake), which a log must not repeat, in
// full or twice, as a parser's error quoting it again would. Values appear
// in warnings quoted (NAME="value", and the standard library's parsers
// quote what they refuse), so this one pass bounds every value a warning
// shows, wherever the text came from.
func clipQuoted(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i])
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil { // a lone quote
			b.WriteByte('"')
			msg = msg[i+1:]
			continue
		}
		msg = msg[i+len(q):]
		if text, err := strconv.Unquote(q); err == nil && len(text) > validutf8.LogLimit {
			q = strconv.Quote(validutf8.Clip(text, validutf8.LogLimit))
		}
		b.WriteString(q)
	}
}

// Warnings returns the warnings recorded so far, each once, in the order
// they were recorded.
func (r *Reader) Warnings() []error { return r.warnings }

// firstValid returns the value parse makes of the first of names that is
// set to a value parse accepts. A set value that parse refuses is warned
// about and skipped, as if unset, so that the next name in line applies.
func firstValid[T any](r *Reader, names []string, parse func(string) (T, error)) (T, bool) {
	for _, name := range names {
		read, v, ok := r.lookup(name)
		if !ok {
			continue
		}
		t, err := parse(v)
		if err == nil {
			return t, true
		}
		r.Invalid(read, v, err)
	}
	var zero T
	return zero, false
}

// Bool reads the first of names that is set as the OpenTelemetry
// specification reads a boolean: "true", in any case, is true; any other
// value is false, with a warning unless it is "false". It reports whether
// one of names is set.
func (r *Reader) Bool(names ...string) (value, ok bool) {
	name, v, set := r.First(names...)
	if !set {
		return false, false
	}
	if strings.EqualFold(v, "true") {
		return true, true
	}
	if !strings.EqualFold(v, "false") {
		r.Warn(fmt.Errorf(`%s=%q: value must be "true" or "false"; read as false`, name, v))
	}
	return false, true
}

// BoolDefaultTrue reads name, a switch that is on by default: "false", in
// any case, is false, "true" is true, and any other value is warned about
// and ignored, leaving it on. The specification's rule that an unknown
// value reads as false is written for switches that are off by default,
// where false is the default; here the default plays that part.
func (r *Reader) BoolDefaultTrue(name string) bool {
	read, v, set := r.lookup(name)
	switch {
	case !set, strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	}
	r.Invalid(read, v, errors.New(`value must be "true" or "false"`))
	return true
}

// PositiveInt reads name as an integer greater than zero; want says what
// a valid value is.
func (r *Reader) PositiveInt(name, want string) (int, bool) {
	return r.IntAtLeast(name, 1, want)
}

// IntAtLeast reads name as an integer no less than least; want says what
// a valid value is.
func (r *Reader) IntAtLeast(name string, least int, want string) (int, bool) {
	return r.IntBetween(name, least, int(^uint(0)>>1), want)
}

// IntBetween reads name as an integer from least to most; want says what
// a valid value is.
func (r *Reader) IntBetween(name string, least, most int, want string) (int, bool) {
	return firstValid(r, []string{name}, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < least || n > most {
			return 0, errors.New(want)
		}
		return n, nil
	})
}

// Duration reads name as a Go duration ("30s", "2m") of at least least,
// or positive when least is 0; what names the quantity in messages.
func (r *Reader) Duration(name, what string, least time.Duration) (time.Duration, bool) {
	return firstValid(r, []string{name}, func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			return 0, err
		case d <= 0:
			return 0, fmt.Errorf("%s must be positive", what)
		case d < least:
			return 0, fmt.Errorf("%s must be at least %s", what, least)
		}
		return d, nil
	})
}

// Millis reads the first of names that is set to a valid value as a whole
// number of milliseconds, at least least (at least 1 ms when least is 0);
// what names the quantity in messages.
func (r *Reader) Millis(what string, least time.Duration, names ...string) (time.Duration, bool) {
	return firstValid(r, names, func(v string) (time.Duration, error) {
		ms, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return 0, fmt.Errorf("%s must be an integer number of milliseconds", what)
		case least > 0 && ms < least.Milliseconds():
			return 0, fmt.Errorf("%s must be at least %d milliseconds", what, least.Milliseconds())
		case ms <= 0:
			return 0, fmt.Errorf("%s must be a positive number of milliseconds", what)
		case ms > int64(time.Duration(1<<63-1)/time.Millisecond):
			return 0, fmt.Errorf("%s is too large", what)
		}
		return time.Duration(ms) * time.Millisecond, nil
	})
}

// Enum reads the first of names that is set to one of valid, in any case,
// and returns it in valid's spelling; what names the setting in messages.
func (r *Reader) Enum(what string, valid []string, names ...string) (string, bool) {
	return firstValid(r, names, func(v string) (string, error) {
		for _, s := range valid {
			if strings.EqualFold(v, s) {
				return s, nil
			}
		}
		return "", errors.New(OneOf(what, valid))
	})
}

// Parse reads the first of names that is set to a value parse accepts.
func Parse[T any](r *Reader, parse func(string) (T, error), names ...string) (T, bool) {
	return firstValid(r, names, parse)
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

// List says how KeyValues reads a key=value list.
type List struct {
	// KeepUndecoded keeps, rather than leaves out, an entry whose value
	// is not percent-encoded correctly, with its value as written: the
	// SDK does so for resource attributes, not for headers.
	KeepUndecoded bool
	// Secret marks a list whose values may be credentials (headers): its
	// warning shows neither the variable's value nor any entry's, only
	// keys, positions and lengths.
	Secret bool
	// Check, if not nil, refuses entries that the caller cannot use; they
	// are left out and named in the same warning. Its errors must not
	// show the values of a Secret list.
	Check func(KeyValue) error
}

// KeyValues reads the first of names that is set in the list format shared
// by OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS. Entries that
// cannot be read are left out, and named in one warning; the others stand,
// as in the OpenTelemetry Go SDK.
func (r *Reader) KeyValues(list List, names ...string) ([]KeyValue, bool) {
	name, v, ok := r.First(names...)
	if !ok {
		return nil, false
	}
	kvs, errs := parseKeyValues(v, list.KeepUndecoded, list.Secret)
	if list.Check != nil {
		kept := kvs[:0]
		for _, kv := range kvs {
			if err := list.Check(kv); err != nil {
				errs = append(errs, err)
				continue
			}
			kept = append(kept, kv)
		}
		kvs = kept
	}
	if len(errs) > 0 {
		what := "left out"
		if len(kvs) > 0 {
			what = "left out, the other entries stand"
		}
		setting := fmt.Sprintf("%s=%q", name, v)
		if list.Secret {
			setting = fmt.Sprintf("%s=(%d bytes, not shown: it may hold credentials)", name, len(v))
		}
		r.Warn(fmt.Errorf("%s: %w; %s", setting, errors.Join(errs...), what))
	}
	return kvs, true
}

// ParseKeyValues parses "key=value" entries separated by commas, as in W3C
// Baggage without properties. Values are percent-decoded; blanks around
// keys and values are dropped; empty entries are skipped. Keys are kept in
// order; a repeated key is kept twice and the last one wins where the
// entries are collected into a set. An entry that cannot be read is left
// out and its error returned; with keepUndecoded, an entry whose value is
// not percent-encoded correctly is kept as written, and still reported.
func ParseKeyValues(s string, keepUndecoded bool) ([]KeyValue, []error) {
	return parseKeyValues(s, keepUndecoded, false)
}

// parseKeyValues is ParseKeyValues; with secret, its errors name entries
// by key or position, never by their text.
func parseKeyValues(s string, keepUndecoded, secret bool) ([]KeyValue, []error) {
	var kvs []KeyValue
	var errs []error
	n := 0
	for entry := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		n++
		what := strconv.Quote(strings.TrimSpace(entry))
		if secret {
			what = "number " + strconv.Itoa(n)
		}
		k, v, ok := strings.Cut(entry, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("entry %s is not key=value", what))
			continue
		}
		k = strings.TrimSpace(k)
		if k == "" {
			errs = append(errs, fmt.Errorf("entry %s has an empty key", what))
			continue
		}
		v = strings.TrimSpace(v)
		decoded, err := url.PathUnescape(v)
		if err != nil {
			reason := fmt.Errorf("value of %q is not percent-encoded correctly: %w", k, err)
			if secret { // the escape error quotes a piece of the value
				reason = fmt.Errorf("value of %q is not percent-encoded correctly", k)
			}
			errs = append(errs, reason)
			if !keepUndecoded {
				continue
			}
			decoded = v
		}
		kvs = append(kvs, KeyValue{k, decoded})
	}
	return kvs, errs
}
