package pprofconv_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/pprofconv"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestReadForms(t *testing.T) {
	reqs := []pprofconv.Request{fixtureWindow("checkout", "a", 0), fixtureWindow("checkout", "a", 1)}
	bin, err := proto.Marshal(reqs[0].Request)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := otlpjson.Marshal(reqs[0].Request, true)
	if err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for _, r := range reqs {
		line, err := otlpjson.Marshal(r.Request, false)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line...)
	}
	tests := []struct {
		name        string
		data        []byte
		wantSources []string
	}{
		{"protobuf", bin, []string{"in"}},
		{"indented json", indented, []string{"in"}},
		{"json lines", lines, []string{"in:1", "in:2"}},
		{"json lines, blank line", append(append([]byte("\n"), lines...), '\n'), []string{"in:2", "in:3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pprofconv.Read(bytes.NewReader(tt.data), "in")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.wantSources) {
				t.Fatalf("read %d requests, want %d", len(got), len(tt.wantSources))
			}
			for i, r := range got {
				if r.Source != tt.wantSources[i] {
					t.Errorf("request %d source %q, want %q", i, r.Source, tt.wantSources[i])
				}
				if !proto.Equal(r.Request, reqs[i].Request) {
					t.Errorf("request %d differs from what was written", i)
				}
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	bin, err := proto.Marshal(fixtureWindow("checkout", "a", 0).Request)
	if err != nil {
		t.Fatal(err)
	}
	line, err := otlpjson.Marshal(fixtureWindow("checkout", "a", 0).Request, false)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bin)
	zw.Close()
	// A field number the request does not define, as a request of another
	// protocol version would carry.
	future := protowire.AppendTag(bytes.Clone(bin), 9, protowire.BytesType)
	future = protowire.AppendBytes(future, []byte("x"))

	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "in: empty: not an OTLP profiles request"},
		{"pprof", gz.Bytes(), "in: gzip-compressed, as pprof profiles are"},
		{"text", []byte("hello, world\n"), "in: not an OTLP profiles request in protobuf, or truncated"},
		{"truncated protobuf", bin[:len(bin)/2], "in: not an OTLP profiles request in protobuf, or truncated"},
		{"unknown field", future, "in: field opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest #9 is unknown to OTLP profiles v1development"},
		{"truncated json", line[:len(line)/2], "in:1: truncated"},
		{"truncated second line", append(bytes.Clone(line), line[:10]...), "in:2: truncated"},
		{"json, not otlp", []byte(`{"hello": "world"}`), "in:1: holds no resource profiles: not an OTLP profiles request"},
		{"json of another version", []byte(`{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"stringTable": ["", "cpu"], "sample": [{"locationIndex": [1]}]}]}]}]}`),
			"in:1: profiles without a dictionary: a request of another version of OTLP profiles than v1development"},
		{"json, wrong types", []byte(`{"resourceProfiles": 3}`), "in:1: not an OTLP profiles request: otlp json"},
		{"json, bad id", []byte(`{"dictionary": {"linkTable": [{"traceId": "xyz"}]}}`), `in:1: not an OTLP profiles request: otlp json: traceId "xyz" is not hex`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pprofconv.Read(bytes.NewReader(tt.data), "in")
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Read = %d requests, error %v; want an error starting %q", len(got), err, tt.wantErr)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(r *pprofconv.Request)
		wantErr string
	}{
		{"stack index", func(r *pprofconv.Request) {
			r.Request.ResourceProfiles[0].ScopeProfiles[1].Profiles[0].Samples[0].StackIndex = 999
		}, "w: cpu profile: stack index 999 out of range"},
		{"no name", func(r *pprofconv.Request) {
			r.Request.ResourceProfiles[0].ScopeProfiles[0].Scope.Attributes = nil
		}, "w: scope_profiles[0] lacks the attribute pprofotel.profile.name"},
		{"order", func(r *pprofconv.Request) {
			for _, kv := range r.Request.ResourceProfiles[0].ScopeProfiles[1].Scope.Attributes {
				if kv.Key == "pprof.scope.sample_type_order" {
					kv.Value.GetArrayValue().Values[1].Value = kv.Value.GetArrayValue().Values[0].Value
				}
			}
		}, "w: cpu profile: pprof.scope.sample_type_order [0 0] is not a set of distinct indices in 0..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixtureWindow("checkout", "a", 0)
			r.Source = "w"
			tt.mutate(&r)
			if _, _, err := pprofconv.Convert([]pprofconv.Request{r}, pprofconv.Filter{}); err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Convert error %v, want one starting %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadPathDirectory(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"profiles-1.pb", "profiles-2.json", ".profiles-3.tmp", "notes.txt"} {
		data, err := proto.Marshal(fixtureWindow("checkout", "a", i).Request)
		if strings.HasSuffix(name, ".json") {
			data, err = otlpjson.Marshal(fixtureWindow("checkout", "a", i).Request, true)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := pprofconv.ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, r := range got {
		sources = append(sources, filepath.Base(r.Source))
	}
	if strings.Join(sources, " ") != "profiles-1.pb profiles-2.json" {
		t.Errorf("read %v, want profiles-1.pb and profiles-2.json", sources)
	}
}

// endless is an input that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '{'
	}
	return len(p), nil
}

// TestReadLimit checks that Read stops at MaxInputSize, and that a regular
// file longer than that is refused before it is read.
func TestReadLimit(t *testing.T) {
	want := "longer than 128 MiB, the most pprofotel reads from one input"
	if _, err := pprofconv.Read(endless{}, "in"); err == nil || err.Error() != "in: "+want+": split it into smaller files" {
		t.Errorf("Read of an endless input: error %v, want %q", err, want)
	}
	path := filepath.Join(t.TempDir(), "big.pb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space taken.
	if err := f.Truncate(pprofconv.MaxInputSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, read := range []func(string) ([]pprofconv.Request, error){pprofconv.ReadFile, pprofconv.ReadPath, func(p string) ([]pprofconv.Request, error) { return pprofconv.ReadPath(filepath.Dir(p)) }} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := read(path)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), path+": "+want) {
			t.Errorf("error %v, want one containing %q", err, path+": "+want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("allocated %d bytes refusing the file, want it refused before it is read", n)
		}
	}
}

// TestReadMemoryBound checks the multiple of its size that reading an input
// allocates, as package pprofconv's doc states it, on the worst inputs: a
// flood of empty messages, each a few bytes and a struct of some 80 bytes
// decoded, and in JSON a flood of small numbers.
func TestReadMemoryBound(t *testing.T) {
	var dict []byte
	for range 200_000 {
		dict = protowire.AppendTag(dict, 7, protowire.BytesType) // an empty stack
		dict = protowire.AppendBytes(dict, nil)
	}
	bin := protowire.AppendTag(nil, 2, protowire.BytesType)
	bin = protowire.AppendBytes(bin, dict)
	bin = protowire.AppendTag(bin, 1, protowire.BytesType) // an empty resource_profiles
	bin = protowire.AppendBytes(bin, nil)
	tests := []struct {
		name string
		data []byte
	}{
		{"protobuf, empty messages", bin},
		{"json, empty objects", []byte(`{"resourceProfiles":[{}],"dictionary":{"stackTable":[` + strings.Repeat("{},", 200_000) + `{}]}}`)},
		{"json, numbers", []byte(`{"resourceProfiles":[{}],"dictionary":{"stackTable":[{"locationIndices":[` + strings.Repeat("1,", 300_000) + `1]}]}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = pprofconv.Read(bytes.NewReader(tt.data), "in") })
			if err != nil {
				t.Fatal(err)
			}
			if ratio := float64(n) / float64(len(tt.data)); ratio > 128 {
				t.Errorf("reading %d bytes allocated %d, %.0f times as much; the doc states at most 128", len(tt.data), n, ratio)
			} else {
				t.Logf("%d bytes: %.0f times as much allocated", len(tt.data), ratio)
			}
		})
	}
}
