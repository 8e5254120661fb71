package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

// writeWindow writes a window of the fixture program as the file exporter
// would.
func writeWindow(t *testing.T, dir, name string) {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs())
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
	writeWindow(t, dir, "w0.pb") // an earlier run's
	p := &windowPrinter{out: &out, dir: dir, seen: windowFiles(dir)}

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

// TestSummaryFollowsPprofFlat checks the summary's top functions against
// the fixture: flat value, the function on top of the stack, runtime frames
// included, as go tool pprof -top ranks them.
func TestSummaryFollowsPprofFlat(t *testing.T) {
	dir := t.TempDir()
	writeWindow(t, dir, "w.pb")
	var out bytes.Buffer
	(&windowPrinter{out: &out, dir: dir, seen: map[string]bool{}}).printNew()
	for _, want := range []string{
		"  cpu           cpu                  40000005 nanoseconds strings.Repeat (75%) main.handle (25%)",
		"  heap          alloc_space              2048 bytes       runtime.mallocgc (100%)",
		"  heap          inuse_space              1324 bytes       runtime.mallocgc (77%) strings.Repeat (23%)",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("summary lacks the line\n%s\nsummary:\n%s", want, out.String())
		}
	}
}

func TestOpenCommand(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	tests := []struct{ dir, want string }{
		{"/tmp/pprofotel-example-1", "go run github.com/pprofotel/profiler/cmd/pprofotel pprof -from 2026-11-23T12:00:00.000000005Z -o /tmp/pprofotel-example-1/pprof -http=: /tmp/pprofotel-example-1"},
		{"/tmp/my windows", "go run github.com/pprofotel/profiler/cmd/pprofotel pprof -from 2026-11-23T12:00:00.000000005Z -o '/tmp/my windows/pprof' -http=: '/tmp/my windows'"},
	}
	for _, tt := range tests {
		if got := openCommand(tt.dir, start); got != tt.want {
			t.Errorf("openCommand(%q) =\n%s\nwant\n%s", tt.dir, got, tt.want)
		}
	}
}
