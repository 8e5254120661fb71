package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// writeWindow writes a one-profile request as the file exporter would.
func writeWindow(t *testing.T, dir, name string) {
	t.Helper()
	req := &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &profilespb.ProfilesDictionary{StringTable: []string{"", "samples", "count"}},
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Profiles: []*profilespb.Profile{{
					SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					TimeUnixNano: 1_700_000_000_000_000_000,
				}},
			}},
		}},
	}
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrintNewPrintsEachWindowOnce checks that the summary printed after
// Stop holds only the windows not printed while the service ran.
func TestPrintNewPrintsEachWindowOnce(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	p := &windowPrinter{out: &out, dir: dir, seen: map[string]bool{}}

	steps := []struct {
		write []string
		want  []string
	}{
		{write: []string{"w1.pb", "w2.pb"}, want: []string{"w1.pb", "w2.pb"}},
		{write: []string{"w3.pb"}, want: []string{"w3.pb"}},
		{want: nil},
	}
	for i, step := range steps {
		for _, name := range step.write {
			writeWindow(t, dir, name)
		}
		out.Reset()
		p.printNew()
		var got []string
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "== window ") {
				got = append(got, strings.TrimSuffix(line[strings.LastIndex(line, "(")+1:], ")"))
			}
		}
		if strings.Join(got, ",") != strings.Join(step.want, ",") {
			t.Errorf("step %d printed windows %v, want %v", i, got, step.want)
		}
	}
}

func TestShortName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"main.load", "main.load"},
		{"net/http.(*persistConn).writeLoop", "http.(*persistConn).writeLoop"},
		{"slices.Clone[go.shape.[]go.shape.int64,go.shape.int64]", "slices.Clone[...]"},
		{"github.com/pprofotel/profiler/internal/delivery.(*Sender[go.shape.*uint8]).run", "delivery.(*Sender[...]).run"},
		{"slices.Grow[go.shape.[]struct { Locations []int32; Labels []github.com/pprofotel/profiler/internal/profile.Label }]", "slices.Grow[...]"},
	}
	for _, tt := range tests {
		if got := shortName(tt.in); got != tt.want {
			t.Errorf("shortName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
