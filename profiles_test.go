package profiler

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect"
)

// TestProfileTypesAreTheDescriptorTable checks that the public constants
// index the descriptor table one to one, so that a new entry needs only its
// constant.
func TestProfileTypesAreTheDescriptorTable(t *testing.T) {
	if numProfileTypes != len(collect.Profiles) {
		t.Fatalf("%d ProfileType constants for %d descriptors", numProfileTypes, len(collect.Profiles))
	}
	want := map[ProfileType]string{CPUProfile: "cpu", HeapProfile: "heap", GoroutineProfile: "goroutine", MutexProfile: "mutex", BlockProfile: "block",
		OffCPUProfile: "offcpu", GoroutineLeakProfile: "goroutineleak"}
	for pt, name := range want {
		if pt.String() != name {
			t.Errorf("%d.String() = %q, want %q", int(pt), pt.String(), name)
		}
		if got, ok := parseProfileType(strings.ToUpper(name)); !ok || got != pt {
			t.Errorf("parseProfileType(%q) = %v, %v", name, got, ok)
		}
	}
	if got := collect.NameList(); got != "cpu, heap, goroutine, mutex, block, offcpu or goroutineleak" {
		t.Errorf("NameList() = %q", got)
	}
}

// TestUnavailableProfileFromEnvironment checks the other side of that
// check: a type the environment asks for and this program cannot provide
// is left out with a warning that names it and says why, and the other
// types run; when none is left the variable is ignored and the defaults
// run. The environment is the operator's, and must not stop the service's
// profiling for what only a rebuild can change.
func TestUnavailableProfileFromEnvironment(t *testing.T) {
	d := &collect.Profiles[OffCPUProfile]
	saved := d.Available
	defer func() { d.Available = saved }()
	d.Available = func() error { return errors.New(`not linked in: import _ "x"`) }

	for _, tt := range []struct {
		env          string
		want         []ProfileType
		wantWarnings []string
	}{
		{"cpu,offcpu,mutex", []ProfileType{CPUProfile, MutexProfile},
			[]string{`PPROFOTEL_PROFILES: offcpu left out: profiler: profile type offcpu: not linked in: import _ "x"`}},
		{"offcpu", defaultProfileTypes(),
			[]string{"PPROFOTEL_PROFILES: offcpu left out", "PPROFOTEL_PROFILES: no profile type this program provides; ignored"}},
	} {
		c := mustConfig(t, nil, map[string]string{"PPROFOTEL_PROFILES": tt.env})
		if !slices.Equal(c.profileTypes, tt.want) {
			t.Errorf("PPROFOTEL_PROFILES=%s: profile types %v, want %v", tt.env, c.profileTypes, tt.want)
		}
		if len(c.warnings) != len(tt.wantWarnings) {
			t.Fatalf("PPROFOTEL_PROFILES=%s: warnings %q, want %d", tt.env, c.warnings, len(tt.wantWarnings))
		}
		for i, w := range tt.wantWarnings {
			if !strings.Contains(c.warnings[i].Error(), w) {
				t.Errorf("PPROFOTEL_PROFILES=%s: warning %q does not say %q", tt.env, c.warnings[i], w)
			}
		}
	}
}

// TestUnavailableProfileFailsStart checks the per-type availability check
// that a profile needing a newer Go uses: Start names the type and the reason.
func TestUnavailableProfileFailsStart(t *testing.T) {
	d := &collect.Profiles[GoroutineProfile]
	saved := d.Available
	defer func() { d.Available = saved }()
	need := errors.New("needs Go 1.99")
	d.Available = func() error { return need }

	p, err := Start(WithProfileTypes(GoroutineProfile), WithExporter(noneExporter{}))
	if err == nil {
		p.Stop(t.Context())
		t.Fatal("Start succeeded with an unavailable profile type")
	}
	if !errors.Is(err, need) || !strings.Contains(err.Error(), "goroutine") {
		t.Errorf("err = %v, want one naming goroutine and wrapping %v", err, need)
	}
	if running.Load() {
		t.Error("a failed Start left the process marked as profiling")
	}
}
