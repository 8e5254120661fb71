package profiler

import (
	"errors"
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

// TestUnavailableProfileFailsStart checks the per-type availability check
// that a profile needing a newer Go uses: Start names the type and the reason.
func TestUnavailableProfileFailsStart(t *testing.T) {
	d := &collect.Profiles[GoroutineProfile]
	saved := d.Available
	defer func() { d.Available = saved }()
	need := errors.New("needs Go 1.99")
	d.Available = func() error { return need }

	p, err := Start(WithProfileTypes(GoroutineProfile), WithExporter(ExporterNone))
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
