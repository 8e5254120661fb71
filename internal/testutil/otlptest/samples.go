package otlptest

import (
	"encoding/hex"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/pprofconv"
)

// Sample is what a sample of a request says about where it was taken:
// its stack's functions, leaf first, its link and its attributes resolved
// through the request's dictionary.
type Sample struct {
	Funcs           []string
	TraceID, SpanID string
	Attrs           map[string]string
	// Values and Timestamps are the sample's own: one value, or one per
	// timestamp (the off-CPU profile's waits).
	Values     []int64
	Timestamps []uint64
	// Profile is the Profile the sample belongs to.
	Profile *profilespb.Profile
}

// InStack reports whether a function named fn, package-qualified or a
// method, is on the sample's stack.
func (s Sample) InStack(fn string) bool {
	for _, f := range s.Funcs {
		if strings.HasSuffix(f, "."+fn) {
			return true
		}
	}
	return false
}

// Samples returns the samples of the given sample type of runtime profile
// name (the pprofotel.profile.name scope attribute) in req.
func Samples(req *collectorpb.ExportProfilesServiceRequest, name, sampleType string) []Sample {
	d := req.GetDictionary()
	str := d.GetStringTable()
	var out []Sample
	for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
		if ScopeName(sp.GetScope()) != name {
			continue
		}
		for _, p := range sp.GetProfiles() {
			if str[p.GetSampleType().GetTypeStrindex()] != sampleType {
				continue
			}
			for _, s := range p.GetSamples() {
				ls := Sample{Attrs: map[string]string{}, Values: s.GetValues(), Timestamps: s.GetTimestampsUnixNano(), Profile: p}
				for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
					for _, ln := range d.GetLocationTable()[li].GetLines() {
						ls.Funcs = append(ls.Funcs, str[d.GetFunctionTable()[ln.GetFunctionIndex()].GetNameStrindex()])
					}
				}
				if s.GetLinkIndex() != 0 {
					l := d.GetLinkTable()[s.GetLinkIndex()]
					ls.TraceID, ls.SpanID = hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())
				}
				for _, ai := range s.GetAttributeIndices() {
					a := d.GetAttributeTable()[ai]
					ls.Attrs[str[a.GetKeyStrindex()]] = a.GetValue().GetStringValue()
				}
				out = append(out, ls)
			}
		}
	}
	return out
}

// ScopeName returns the runtime profile a scope holds, its
// pprofotel.profile.name attribute.
func ScopeName(s *commonpb.InstrumentationScope) string {
	return scopeAttribute(s, otlpattr.ProfileName).GetStringValue()
}

// ReadDir reads the requests the file exporter wrote into dir, in the
// order written, and checks each with Validate.
func ReadDir(t testing.TB, dir string) []*collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	sort.Strings(files)
	var out []*collectorpb.ExportProfilesServiceRequest
	for _, f := range files {
		reqs, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := Validate(r.Request); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			out = append(out, r.Request)
		}
	}
	return out
}
