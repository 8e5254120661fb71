package pprofconv_test

import (
	"bytes"
	"testing"

	pprof "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/pprofconv"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// fuzzSeeds returns fixture windows to start the fuzzers from: whole
// requests, a CPU window alone, and one without period types.
func fuzzSeeds(t testing.TB) []pprofconv.Request {
	noPeriod := cpuOnly(t, 1)
	for _, p := range scopeOf(t, noPeriod, "cpu").Profiles {
		p.PeriodType = nil
	}
	return []pprofconv.Request{fixtureWindow("checkout", "a", 0), cpuOnly(t, 0), noPeriod}
}

// FuzzReadProtobuf reads arbitrary bytes as a file of OTLP profiles and
// converts what it accepts: neither may panic, and what Convert returns
// must be valid pprof that pprof's own reader reads back, PGO included.
func FuzzReadProtobuf(f *testing.F) {
	for _, r := range fuzzSeeds(f) {
		data, err := proto.Marshal(r.Request)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(readAndConvert)
}

// FuzzReadJSON is FuzzReadProtobuf from OTLP/JSON: one request per line,
// as the Collector's file exporter writes them, and one indented request,
// as the profiler's file exporter does.
func FuzzReadJSON(f *testing.F) {
	var lines []byte
	for _, r := range fuzzSeeds(f) {
		line, err := otlpjson.Marshal(r.Request, false)
		if err != nil {
			f.Fatal(err)
		}
		lines = append(lines, line...)
		indented, err := otlpjson.Marshal(r.Request, true)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(indented)
	}
	f.Add(lines)
	f.Fuzz(readAndConvert)
}

// FuzzReadCollectorProtobuf is FuzzReadProtobuf from the Collector's file
// exporter's format proto output: requests each preceded by its length, a
// big-endian uint32, alone or several, and compressed with zstd one by one
// or whole, as its compression setting writes them.
func FuzzReadCollectorProtobuf(f *testing.F) {
	var all [][]byte
	for _, r := range fuzzSeeds(f) {
		data, err := proto.Marshal(r.Request)
		if err != nil {
			f.Fatal(err)
		}
		all = append(all, data)
		f.Add(lengthPrefixed(data))
	}
	f.Add(lengthPrefixed(all...))
	f.Add(lengthPrefixed(zstdCompress(f, all[0]), nil, zstdCompress(f, all[1])))
	f.Add(zstdCompress(f, lengthPrefixed(all...)))
	f.Fuzz(readAndConvert)
}

// readAndConvert is the body of the fuzz targets: Read, Convert, and the
// checks of what they return.
func readAndConvert(t *testing.T, data []byte) {
	reqs, err := pprofconv.Read(bytes.NewReader(data), "fuzz")
	if err != nil {
		return
	}
	// The same requests twice, which Convert reads once, and copies
	// without profile ids, which it merges with them.
	all := append(reqs, reqs...)
	for _, r := range reqs {
		c := proto.Clone(r.Request).(*collectorpb.ExportProfilesServiceRequest)
		for _, rp := range c.ResourceProfiles {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					p.ProfileId = nil
				}
			}
		}
		all = append(all, pprofconv.Request{Source: "copy", Request: c})
	}
	profiles, rep, err := pprofconv.Convert(all, pprofconv.Filter{})
	if err != nil {
		return
	}
	if rep.NegativeValues < 0 {
		t.Fatalf("report %+v", rep)
	}
	for name, p := range profiles {
		checkProfile(t, name, p)
		if name == "cpu" {
			pgo, err := pprofconv.PGO(p)
			if err != nil {
				t.Fatalf("PGO of a converted CPU profile: %v", err)
			}
			checkProfile(t, "pgo", pgo)
		}
	}
}

// checkProfile checks that p is valid, holds no negative value, and is
// read back by pprof as it was written.
func checkProfile(t *testing.T, name string, p *pprof.Profile) {
	t.Helper()
	if err := p.CheckValid(); err != nil {
		t.Fatalf("%s: invalid pprof profile: %v", name, err)
	}
	for _, s := range p.Sample {
		for _, v := range s.Value {
			if v < 0 {
				t.Fatalf("%s: sample value %d below zero", name, v)
			}
		}
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatalf("%s: write: %v", name, err)
	}
	back, err := pprof.ParseData(buf.Bytes())
	if err != nil {
		t.Fatalf("%s: pprof does not read back what was written: %v", name, err)
	}
	if len(back.Sample) != len(p.Sample) || len(back.SampleType) != len(p.SampleType) {
		t.Fatalf("%s: read back %d samples of %d types, wrote %d of %d", name, len(back.Sample), len(back.SampleType), len(p.Sample), len(p.SampleType))
	}
}
