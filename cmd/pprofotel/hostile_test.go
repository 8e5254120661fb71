package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// window returns window w of the fixture program, its CPU profile only,
// after mutate.
func window(t *testing.T, w int, mutate func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile)) *collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	start := time.Unix(1_800_000_000, 0).Add(time.Duration(w) * time.Second)
	req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs()[1:2])
	if mutate != nil {
		mutate(req.Dictionary, req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0])
	}
	return req
}

// writeRequest writes req into dir/name as protobuf and returns the path.
func writeRequest(t *testing.T, dir, name string, req *collectorpb.ExportProfilesServiceRequest) string {
	t.Helper()
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// endless is standard input that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// TestHostileInput runs the command on the inputs of issue 25's attack
// run: each is refused with an error naming the input and the limit, or
// converted, never a panic, a hang or unbounded memory.
func TestHostileInput(t *testing.T) {
	noPeriod := func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) { cpu.PeriodType = nil }
	deepStack := func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
		stack := &profilespb.Stack{LocationIndices: make([]int32, 20000)}
		for i := range stack.LocationIndices {
			stack.LocationIndices[i] = 1
		}
		d.StackTable = append(d.StackTable, stack)
		for i := range 4000 {
			d.LinkTable = append(d.LinkTable, &profilespb.Link{TraceId: fmt.Appendf(nil, "trace-%010d", i), SpanId: fmt.Appendf(nil, "sp%06d", i)})
			cpu.Samples = append(cpu.Samples, &profilespb.Sample{StackIndex: int32(len(d.StackTable) - 1), LinkIndex: int32(len(d.LinkTable) - 1), Values: []int64{1}})
		}
	}
	tests := []struct {
		name       string
		files      func(t *testing.T, dir string)
		stdin      bool
		wantErr    string // empty: converted
		wantStderr string
	}{
		{"windows without period type", func(t *testing.T, dir string) {
			writeRequest(t, dir, "a.pb", window(t, 0, noPeriod))
			writeRequest(t, dir, "b.pb", window(t, 1, noPeriod))
		}, false, "", ""},
		{"period types differ", func(t *testing.T, dir string) {
			writeRequest(t, dir, "a.pb", window(t, 0, nil))
			writeRequest(t, dir, "b.pb", window(t, 1, noPeriod))
		}, false, "cpu profile: DIR/a.pb and DIR/b.pb: windows of different period types, cpu/nanoseconds and none", ""},
		{"deep stack cited by every sample", func(t *testing.T, dir string) {
			writeRequest(t, dir, "a.pb", window(t, 0, deepStack))
		}, false, "DIR/a.pb: cpu profile: the pprof form of the input would pass", ""},
		{"the same window twice", func(t *testing.T, dir string) {
			req := window(t, 0, nil)
			writeRequest(t, dir, "a.pb", req)
			writeRequest(t, dir, "b.pb", req)
		}, false, "", "pprofotel: DIR/b.pb: cpu window read already from DIR/a.pb (same profile ids and samples): left out\n"},
		{"negative values", func(t *testing.T, dir string) {
			writeRequest(t, dir, "a.pb", window(t, 0, func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
				cpu.Samples[0].Values[0] = -4000
			}))
		}, false, "", "pprofotel: warning: 1 sample values or periods below zero read as 0: the input was not written by a profiler\n"},
		{"overflowing values", func(t *testing.T, dir string) {
			writeRequest(t, dir, "a.pb", window(t, 0, func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
				cpu.Samples[0].Values[0] = 1 << 62
				cpu.Samples = append(cpu.Samples, &profilespb.Sample{StackIndex: cpu.Samples[0].StackIndex, LinkIndex: cpu.Samples[0].LinkIndex,
					AttributeIndices: cpu.Samples[0].AttributeIndices, Values: []int64{1 << 62}})
			}))
			writeRequest(t, dir, "b.pb", window(t, 1, func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
				cpu.Samples[0].Values[0] = 1 << 62
			}))
		}, false, "DIR/a.pb: cpu profile: samples values add up past the int64 maximum", ""},
		{"endless standard input", nil, true, "standard input: longer than 128 MiB, the most pprofotel reads from one input", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			args := []string{"pprof", "-o", out, dir}
			var stdin endless
			if tt.stdin {
				args[3] = "-"
			} else {
				tt.files(t, dir)
			}
			var stdout, stderr bytes.Buffer
			err := run(args, stdin, &stdout, &stderr)
			wantErr := strings.ReplaceAll(tt.wantErr, "DIR", dir)
			switch {
			case wantErr == "" && err != nil:
				t.Fatalf("pprofotel pprof: %v", err)
			case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
				t.Fatalf("error %v, want one containing %q", err, wantErr)
			}
			if want := strings.ReplaceAll(tt.wantStderr, "DIR", dir); stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
		})
	}
}

// TestPGOOntoLink checks that pgo -o onto a symbolic link writes the file
// the link points to and keeps the link.
func TestPGOOntoLink(t *testing.T) {
	dir, kept := t.TempDir(), t.TempDir()
	in := writeRequest(t, t.TempDir(), "a.pb", window(t, 0, nil))
	target := filepath.Join(kept, "service.pgo")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "default.pgo")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"pgo", "-o", link, in}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("pprofotel pgo: %v\n%s", err, stderr.String())
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symbolic link (%v)", link, err)
	}
	if p := readProfile(t, target); len(p.Sample) == 0 {
		t.Errorf("%s, the link's target, holds no samples", target)
	}
}

// TestCommandMemoryBound runs both subcommands on files whose pprof form
// comes close to pprofconv's expansion budget, a deep stack or a wide
// attribute cited by 4,000 samples, each with a span of its own, and
// checks what they allocate against the bound the command's doc states:
// 768 times the input plus 80 MiB.
func TestCommandMemoryBound(t *testing.T) {
	// cited makes cpu's samples 4,000 that cite stack and attrs, each with
	// a link of its own.
	cited := func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile, stack []int32, attrs []int32) {
		d.StackTable = append(d.StackTable, &profilespb.Stack{LocationIndices: stack})
		for i := range 4000 {
			d.LinkTable = append(d.LinkTable, &profilespb.Link{TraceId: fmt.Appendf(nil, "trace-%010d", i), SpanId: fmt.Appendf(nil, "sp%06d", i)})
			cpu.Samples = append(cpu.Samples, &profilespb.Sample{StackIndex: int32(len(d.StackTable) - 1), LinkIndex: int32(len(d.LinkTable) - 1),
				AttributeIndices: attrs, Values: []int64{1}})
		}
	}
	shapes := []struct {
		name string
		// mutate makes the window cite n units of something per sample.
		mutate func(n int) func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile)
	}{
		{"deep stack", func(n int) func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
			return func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
				stack := make([]int32, n)
				for i := range stack {
					stack[i] = int32(1 + i%2)
				}
				cited(d, cpu, stack, nil)
			}
		}},
		{"wide attribute", func(n int) func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
			return func(d *profilespb.ProfilesDictionary, cpu *profilespb.Profile) {
				values := make([]*commonpb.AnyValue, n)
				for i := range values {
					values[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}
				}
				d.StringTable = append(d.StringTable, "wide")
				d.AttributeTable = append(d.AttributeTable, &profilespb.KeyValueAndUnit{KeyStrindex: int32(len(d.StringTable) - 1),
					Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}}})
				cited(d, cpu, []int32{1}, []int32{int32(len(d.AttributeTable) - 1)})
			}
		}},
	}
	for _, shape := range shapes {
		// The most locations or label values per sample within the
		// budget, less 5 %: each sample holds itself, 1 value, 2 link
		// labels (8 units each) and the n, each a byte of input or more.
		base := proto.Size(window(t, 0, shape.mutate(0)))
		per := 1
		if shape.name == "wide attribute" {
			per = 8
		}
		n := (pprofconv.ExpansionBase + pprofconv.ExpansionPerByte*base - 4000*18) / (4000*per - pprofconv.ExpansionPerByte) * 95 / 100
		in := writeRequest(t, t.TempDir(), "in.pb", window(t, 0, shape.mutate(n)))
		info, err := os.Stat(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range []string{"pprof", "pgo"} {
			t.Run(shape.name+"/"+sub, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				out := filepath.Join(t.TempDir(), "out")
				var err error
				allocated := allocatedBy(func() { err = run([]string{sub, "-o", out, in}, nil, &stdout, &stderr) })
				if err != nil {
					t.Fatalf("pprofotel %s: %v", sub, err)
				}
				if limit := 768*uint64(info.Size()) + 80<<20; allocated > limit {
					t.Errorf("pprofotel %s of %d bytes (%d units cited by 4,000 samples) allocated %d bytes, want at most %d", sub, info.Size(), n, allocated, limit)
				}
				t.Logf("%d bytes, %d units cited by 4,000 samples: %.1f MB allocated, %.0f times the input", info.Size(), n, float64(allocated)/1e6, float64(allocated)/float64(info.Size()))
			})
		}
	}
}

// allocatedBy returns the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
