package opamp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/pprofotel/profiler/internal/control"
)

// ConfigName is the name of the profiler's file in the AgentConfigMap of a
// remote configuration, and of its effective configuration.
const ConfigName = "pprofotel"

// remoteStatusName names the file of the effective configuration that says
// which remote configuration is in effect and until when.
const remoteStatusName = "pprofotel.remote"

// MaxConfigBytes bounds the profiler's file in a remote configuration; a
// larger one is refused unread. opamp-go v0.22.0 reads every message from
// the server whole, with no limit it lets an agent set, so this bounds
// what the profiler accepts, not what the client reads.
const MaxConfigBytes = 64 << 10

// document is the profiler's file in a remote configuration: JSON, every
// field optional, an absent field keeping the local value. The effective
// configuration is reported in the same form, every field set, so that a
// server can start a remote configuration from it.
type document struct {
	Enabled               *bool     `json:"enabled,omitempty"`
	Profiles              *[]string `json:"profiles,omitempty"`
	Window                *duration `json:"window,omitempty"`
	CPUDutyCycle          *int      `json:"cpu_duty_cycle,omitempty"`
	OffCPUDutyCycle       *int      `json:"offcpu_duty_cycle,omitempty"`
	MutexProfileFraction  *int      `json:"mutex_profile_fraction,omitempty"`
	BlockProfileRate      *int      `json:"block_profile_rate,omitempty"`
	MaxGoroutines         *int      `json:"max_goroutines,omitempty"`
	GoroutineLeakInterval *duration `json:"goroutineleak_interval,omitempty"`
	// ExpiresIn, when set, returns the local configuration that long
	// after the remote one is accepted.
	ExpiresIn *duration `json:"expires_in,omitempty"`
}

// duration is a time.Duration spelled as time.ParseDuration reads it:
// "10s", "1m30s".
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"10s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"10s\": %w", err)
	}
	*d = duration(v)
	return nil
}

// remoteChange is what a remote configuration asks for: settings over the
// local ones, and how long they last (0: until the server changes them).
type remoteChange struct {
	settings  control.Settings
	expiresIn time.Duration
}

// parseRemote reads a remote configuration into the settings it asks for
// over local, refusing it whole when a file other than ConfigName (or the
// unnamed file) is in it, when the file is not one JSON object of known keys, or when a value
// exceeds the local bounds. An empty configuration, or an empty file, asks
// for the local settings. Whether the values are valid is for the
// profiler to say (control.Target.Apply), with its options' errors.
func parseRemote(cm *protobufs.AgentConfigMap, local control.Settings, b bounds) (remoteChange, error) {
	change := remoteChange{settings: local}
	var file *protobufs.AgentConfigFile
	for name, f := range cm.GetConfigMap() {
		// The unnamed file is the agent's main one, where servers that
		// manage one file per agent (opamp-go's example server) put it.
		if name != ConfigName && name != "" {
			return change, fmt.Errorf("unknown configuration file %q: the profiler reads only %q (or the unnamed file)", name, ConfigName)
		}
		if file != nil {
			return change, fmt.Errorf("two configuration files, %q and the unnamed one: send one", ConfigName)
		}
		file = f
	}
	body := bytes.TrimSpace(file.GetBody())
	if len(body) == 0 {
		return change, nil
	}
	switch ct := file.GetContentType(); ct {
	case "", "application/json", "text/json":
	default:
		return change, fmt.Errorf("content type %q: want application/json", ct)
	}
	if len(body) > MaxConfigBytes {
		return change, fmt.Errorf("%d bytes: the profiler accepts at most %d", len(body), MaxConfigBytes)
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return change, fmt.Errorf("not a configuration of the profiler: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return change, errors.New("not a configuration of the profiler: more than one JSON value")
	}
	if err := b.check(&doc); err != nil {
		return change, err
	}
	doc.over(&change.settings)
	if doc.ExpiresIn != nil {
		change.expiresIn = time.Duration(*doc.ExpiresIn)
	}
	return change, nil
}

// over sets in s the fields the document sets.
func (d *document) over(s *control.Settings) {
	set(&s.Enabled, d.Enabled)
	if d.Profiles != nil {
		s.ProfileTypes = slices.Clone(*d.Profiles)
	}
	if d.Window != nil {
		s.Window = time.Duration(*d.Window)
	}
	set(&s.CPUDuty, d.CPUDutyCycle)
	set(&s.OffCPUDuty, d.OffCPUDutyCycle)
	set(&s.MutexFraction, d.MutexProfileFraction)
	set(&s.BlockRate, d.BlockProfileRate)
	set(&s.MaxGoroutines, d.MaxGoroutines)
	if d.GoroutineLeakInterval != nil {
		s.LeakInterval = time.Duration(*d.GoroutineLeakInterval)
	}
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// documentOf is s as a document, every field set.
func documentOf(s control.Settings) document {
	window, leak := duration(s.Window), duration(s.LeakInterval)
	return document{
		Enabled:               &s.Enabled,
		Profiles:              &s.ProfileTypes,
		Window:                &window,
		CPUDutyCycle:          &s.CPUDuty,
		OffCPUDutyCycle:       &s.OffCPUDuty,
		MutexProfileFraction:  &s.MutexFraction,
		BlockProfileRate:      &s.BlockRate,
		MaxGoroutines:         &s.MaxGoroutines,
		GoroutineLeakInterval: &leak,
	}
}

// bounds are the limits that a remote configuration may not exceed, set
// by the application (see the With...Bound options): they keep a careless
// or compromised server from taking a service's CPU.
type bounds struct {
	maxCPUDuty, maxOffCPUDuty int
	minWindow, maxWindow      time.Duration
	minMutexFraction          int
	minBlockRate              int
	maxGoroutines             int
	minLeakInterval           time.Duration
	maxExpiry                 time.Duration
}

// defaultBounds are the bounds unless options say otherwise.
var defaultBounds = bounds{
	maxCPUDuty:       50,
	maxOffCPUDuty:    50,
	minWindow:        10 * time.Second,
	maxWindow:        5 * time.Minute,
	minMutexFraction: 5,
	minBlockRate:     1000,
	maxGoroutines:    10_000,
	minLeakInterval:  time.Minute,
	maxExpiry:        24 * time.Hour,
}

// The bounds no option sets: beyond them a remote configuration records
// too little to be of use. They keep every value bounded on both sides.
const (
	maxMutexFraction = 1_000_000
	maxBlockRate     = int(time.Second)
	maxLeakInterval  = 24 * time.Hour
)

// check reports every value of d beyond the bounds, each naming the key,
// its value, the bound and the option that sets it.
func (b bounds) check(d *document) error {
	var errs []string
	beyond := func(key string, v any, what string, bound any, option string) {
		errs = append(errs, fmt.Sprintf("%s %v is %s %v, the local bound (opamp.%s)", key, v, what, bound, option))
	}
	fixed := func(key string, v any, what string, bound any) {
		errs = append(errs, fmt.Sprintf("%s %v is %s %v, the remote configuration's limit", key, v, what, bound))
	}
	if v := d.CPUDutyCycle; v != nil && *v < 1 {
		fixed("cpu_duty_cycle", *v, "below", 1)
	}
	if v := d.CPUDutyCycle; v != nil && *v > b.maxCPUDuty {
		beyond("cpu_duty_cycle", *v, "above", b.maxCPUDuty, "WithMaxCPUDutyCycle")
	}
	if v := d.OffCPUDutyCycle; v != nil && *v < 1 {
		fixed("offcpu_duty_cycle", *v, "below", 1)
	}
	if v := d.OffCPUDutyCycle; v != nil && *v > b.maxOffCPUDuty {
		beyond("offcpu_duty_cycle", *v, "above", b.maxOffCPUDuty, "WithMaxOffCPUDutyCycle")
	}
	if v := d.Window; v != nil && time.Duration(*v) < b.minWindow {
		beyond("window", time.Duration(*v), "below", b.minWindow, "WithMinWindow")
	}
	if v := d.Window; v != nil && time.Duration(*v) > b.maxWindow {
		beyond("window", time.Duration(*v), "above", b.maxWindow, "WithMaxWindow")
	}
	if v := d.MutexProfileFraction; v != nil && *v < b.minMutexFraction {
		beyond("mutex_profile_fraction", *v, "below", b.minMutexFraction, "WithMinMutexProfileFraction")
	}
	if v := d.MutexProfileFraction; v != nil && *v > maxMutexFraction {
		fixed("mutex_profile_fraction", *v, "above", maxMutexFraction)
	}
	if v := d.BlockProfileRate; v != nil && *v < b.minBlockRate {
		beyond("block_profile_rate", *v, "below", b.minBlockRate, "WithMinBlockProfileRate")
	}
	if v := d.BlockProfileRate; v != nil && *v > maxBlockRate {
		fixed("block_profile_rate", *v, "above", maxBlockRate)
	}
	if v := d.MaxGoroutines; v != nil && (*v < 1 || *v > b.maxGoroutines) {
		beyond("max_goroutines", *v, "beyond", b.maxGoroutines, "WithMaxGoroutineGuard")
	}
	if v := d.GoroutineLeakInterval; v != nil && time.Duration(*v) < b.minLeakInterval {
		beyond("goroutineleak_interval", time.Duration(*v), "below", b.minLeakInterval, "WithMinGoroutineLeakInterval")
	}
	if v := d.GoroutineLeakInterval; v != nil && time.Duration(*v) > maxLeakInterval {
		fixed("goroutineleak_interval", time.Duration(*v), "above", maxLeakInterval)
	}
	if v := d.ExpiresIn; v != nil && (*v <= 0 || time.Duration(*v) > b.maxExpiry) {
		beyond("expires_in", time.Duration(*v), "not positive or above", b.maxExpiry, "WithMaxExpiry")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
