package offcpu_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
)

// executableMappings returns, for each runtime profile of req, the mapping
// indexes its locations use that name the executable exe, and the GNU
// build id of each mapping.
func executableMappings(req *collectorpb.ExportProfilesServiceRequest, exe string) (byProfile map[string][]int32, gnu map[int32]string) {
	d := req.GetDictionary()
	str := d.GetStringTable()
	byProfile, gnu = make(map[string][]int32), make(map[int32]string)
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			name := otlptest.ScopeName(sp.GetScope())
			for _, prof := range sp.GetProfiles() {
				for _, s := range prof.GetSamples() {
					for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
						mi := d.GetLocationTable()[li].GetMappingIndex()
						m := d.GetMappingTable()[mi]
						if str[m.GetFilenameStrindex()] != exe || slices.Contains(byProfile[name], mi) {
							continue
						}
						byProfile[name] = append(byProfile[name], mi)
						for _, ai := range m.GetAttributeIndices() {
							if a := d.GetAttributeTable()[ai]; str[a.GetKeyStrindex()] == "process.executable.build_id.gnu" {
								gnu[mi] = a.GetValue().GetStringValue()
							}
						}
					}
				}
			}
		}
	}
	return byProfile, gnu
}

// burn spends about d on CPU.
//
//go:noinline
func burn(d time.Duration) (n int) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10_000 {
			n += i * i
		}
	}
	return n
}

// TestOffCPUAndSlowRequestsShareTheExecutableMapping checks that the
// off-CPU and slow-request profiles' locations in the executable point at
// a mapping the runtime's own profiles (CPU, heap) use, with its GNU build
// id, in the OTLP output and after pprofconv (pprofotel pprof). They used
// to point at a second mapping of the executable that carried no GNU build
// id. (The runtime marks a mapping HasFunctions only when every location
// of the profile in it was symbolized, so the CPU and heap profiles may
// state the executable's mapping twice, alike but for that flag.)
func TestOffCPUAndSlowRequestsShareTheExecutableMapping(t *testing.T) {
	tracer, p, dir := startToFiles(t,
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.OffCPUProfile),
		profiler.WithOffCPUDutyCycle(100),
		profiler.WithSlowRequestThreshold(50*time.Millisecond))
	_, span := tracer.Start(context.Background(), "GET /mapped")
	burn(300 * time.Millisecond)
	lockHandler(150 * time.Millisecond)
	span.End()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range otlptest.ReadDir(t, dir) {
		byProfile, gnu := executableMappings(req, exe)
		runtimes := append(slices.Clone(byProfile["cpu"]), byProfile["heap"]...)
		if len(runtimes) == 0 {
			t.Fatalf("neither the CPU nor the heap profile has a location in the executable: %v", byProfile)
		}
		for _, mi := range runtimes {
			if gnu[mi] == "" {
				t.Fatalf("the runtime's profiles' executable mapping %d has no GNU build id: %v", mi, gnu)
			}
		}
		for _, name := range []string{"offcpu", "slowrequests"} {
			got := byProfile[name]
			if len(got) == 0 {
				t.Errorf("the %s profile has no location in the executable", name)
			}
			for _, mi := range got {
				if !slices.Contains(runtimes, mi) {
					t.Errorf("the %s profile's executable mappings are %v (GNU build ids %v), want the CPU and heap profiles' %v", name, got, gnu, runtimes)
				}
			}
		}
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	var reqs []pprofconv.Request
	for _, f := range files {
		r, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r...)
	}
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	heap := profiles["heap"]
	if heap == nil || len(heap.Mapping) == 0 || heap.Mapping[0].BuildID == "" {
		t.Fatalf("the converted heap profile's main mapping has no build id: %v", heap)
	}
	for _, name := range []string{"offcpu", "slowrequests"} {
		cp := profiles[name]
		if cp == nil || len(cp.Mapping) == 0 {
			t.Errorf("no converted %s profile, or it has no mapping", name)
			continue
		}
		if m := cp.Mapping[0]; m.File != exe || m.BuildID != heap.Mapping[0].BuildID {
			t.Errorf("the converted %s profile's main mapping is %q with build id %q, want %q with %q", name, m.File, m.BuildID, exe, heap.Mapping[0].BuildID)
		}
	}
}
