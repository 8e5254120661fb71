package offcpu

import (
	"bytes"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

func TestMappingsOf(t *testing.T) {
	const exe = "/srv/app"
	text := pprofdecode.Mapping{Start: 0x400000, Limit: 0xb40000, File: exe, BuildID: "ab12"}
	second := pprofdecode.Mapping{Start: 0x55d000200000, Limit: 0x55d000300000, Offset: 0x200000, File: exe, BuildID: "ab12"}
	libc := pprofdecode.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000021000, File: "/usr/lib/libc.so.6", BuildID: "cd34"}
	withFuncs := func(m pprofdecode.Mapping) pprofdecode.Mapping { m.HasFunctions = true; return m }
	tests := []struct {
		name string
		ms   []pprofdecode.Mapping
		want []pprofdecode.Mapping
	}{
		{"the executable's text, its build id kept", []pprofdecode.Mapping{text, libc}, []pprofdecode.Mapping{withFuncs(text)}},
		{"two executable segments, each its own", []pprofdecode.Mapping{libc, text, second}, []pprofdecode.Mapping{withFuncs(text), withFuncs(second)}},
		{"another file of the same prefix is not the executable", []pprofdecode.Mapping{{Start: 1, Limit: 2, File: exe + ".old"}}, nil},
		{"an empty range is passed over", []pprofdecode.Mapping{{Start: 2, Limit: 2, File: exe}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mappingsOf(tt.ms, exe); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mappingsOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestExecutableMappingsAreTheRuntimes checks that the locations of the
// recorder's own code map to a mapping of the executable that is, field
// for field, one the runtime's CPU profile states, build id included.
func TestExecutableMappingsAreTheRuntimes(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := pprofdecode.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	pc := uint64(reflect.ValueOf(exeMappingIndex).Pointer())
	i := exeMappingIndex(pc)
	if i < 0 {
		t.Fatalf("the recorder's code at %#x maps to no mapping of the executable: %+v", pc, executableMappings())
	}
	got := executableMappings()[i]
	if got.BuildID == "" {
		t.Errorf("the executable's mapping %+v has no build id", got)
	}
	for _, m := range p.Mappings {
		if m.Start == got.Start {
			m.HasFunctions = true
			if m != got {
				t.Errorf("mapping %+v, the runtime's is %+v", got, m)
			}
			return
		}
	}
	t.Errorf("mapping %+v is none of the runtime's: %+v", got, p.Mappings)
}

// TestRecorderFuncNamesTheRecorder checks that recorderFunc, by which the
// parser leaves the recorder's own waits out, is the prefix of the
// Recorder's methods' names as the runtime spells them: a package move
// would silently let them in.
func TestRecorderFuncNamesTheRecorder(t *testing.T) {
	name := runtime.FuncForPC(reflect.ValueOf((*Recorder).Collect).Pointer()).Name()
	if !strings.HasPrefix(name, recorderFunc) {
		t.Errorf("the Recorder's Collect is %q, which recorderFunc %q does not name", name, recorderFunc)
	}
}
