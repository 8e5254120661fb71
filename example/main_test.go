package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
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
				got = append(got, strings.TrimSuffix(line[strings.LastIndex(line, "[")+1:], "]"))
			}
		}
		if strings.Join(got, ",") != strings.Join(step.want, ",") {
			t.Errorf("step %d printed windows %v, want %v", i, got, step.want)
		}
	}
}

func TestSlowCommand(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	tests := []struct {
		dir    string
		others bool
		want   string
	}{
		{"/tmp/pprofotel-example-1", false, "go run ./cmd/pprofotel slow /tmp/pprofotel-example-1"},
		{"/tmp/my windows", false, "go run ./cmd/pprofotel slow '/tmp/my windows'"},
		{"/tmp/shared", true, "go run ./cmd/pprofotel slow -from 2026-11-23T12:00:00.000000005Z /tmp/shared"},
	}
	for _, tt := range tests {
		if got := slowCommand(tt.dir, start, tt.others); got != tt.want {
			t.Errorf("slowCommand(%q, %v) =\n%s\nwant\n%s", tt.dir, tt.others, got, tt.want)
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

// TestSummaryRows checks the summary of the fixture's window: its header
// gives the window and, apart, the part the CPU profile recorded; CPU is
// one row, in seconds with the samples beside it; cpu and heap rank
// functions by flat value, as go tool pprof -top does.
func TestSummaryRows(t *testing.T) {
	dir := t.TempDir()
	writeWindow(t, dir, "w.pb")
	var out bytes.Buffer
	(&windowPrinter{out: &out, dir: dir, seen: map[string]bool{}}).printNew()
	start := time.Unix(1_700_000_000, 0)
	span := start.Format("15:04:05.000") + "–" + start.Add(time.Second).Format("15:04:05.000") + " (1s)"
	for _, want := range []string{
		"== window " + span + "; CPU recorded " + span + "  [w.pb]",
		"  cpu           CPU time                    0.07 s (7 samples)  main.handle (57%) strings.Repeat (43%)",
		"  heap          alloc_space                             2.0 kB  runtime.mallocgc (100%)",
		"  heap          inuse_space                             1.3 kB  runtime.mallocgc (77%) strings.Repeat (23%)",
	} {
		if !strings.Contains(out.String(), "\n"+want+"\n") {
			t.Errorf("summary lacks the line\n%s\nsummary:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n  cpu "); n != 1 {
		t.Errorf("summary has %d cpu rows, want 1:\n%s", n, out.String())
	}
}

// stack makes a sample whose stack is frames, from the top; a frame of
// several functions separated by "<" is one location holding inlined
// functions, the innermost first.
func stack(frames ...string) *gpprof.Sample {
	s := &gpprof.Sample{Value: []int64{1}}
	for _, f := range frames {
		loc := &gpprof.Location{}
		for _, fn := range strings.Split(f, "<") {
			loc.Line = append(loc.Line, gpprof.Line{Function: &gpprof.Function{Name: fn}})
		}
		s.Location = append(s.Location, loc)
	}
	return s
}

func TestWaitSite(t *testing.T) {
	tests := []struct {
		name string
		s    *gpprof.Sample
		want string
	}{
		{"leaked send", stack("runtime.gopark", "runtime.chansend", "runtime.chansend1", "main.(*service).lookup.func1", "runtime.goexit"),
			"main.(*service).lookup.func1"},
		{"runtime function linked into another package", stack("runtime.gopark", "runtime.netpollblock", "internal/poll.runtime_pollWait", "internal/poll.(*pollDesc).wait", "internal/poll.(*FD).Read"),
			"internal/poll.(*pollDesc).wait"},
		{"sync", stack("runtime.gopark", "runtime.goparkunlock", "runtime.semacquire1", "sync.runtime_notifyListWait", "sync.(*Cond).Wait", "main.f"),
			"sync.(*Cond).Wait"},
		{"runtime's internal packages", stack("internal/runtime/syscall.Syscall6", "runtime/internal/x.f", "main.g"), "main.g"},
		{"runtime/pprof is outside", stack("runtime.goroutineProfileWithLabels", "runtime/pprof.writeGoroutine", "main.h"),
			"runtime/pprof.writeGoroutine"},
		{"inlined frames count", stack("runtime.gopark", "runtime.chanrecv<runtime.chanrecv1<main.inlined", "main.caller"), "main.inlined"},
		{"all the runtime's: the goroutine's own function", stack("runtime.gopark", "runtime.gcBgMarkWorker", "runtime.goexit"),
			"runtime.gcBgMarkWorker"},
		{"no stack", stack(), "?"},
	}
	for _, tt := range tests {
		if got := waitSite(tt.s); got != tt.want {
			t.Errorf("%s: waitSite = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestOpenCommand(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	tests := []struct {
		dir    string
		others bool
		want   string
	}{
		{"/tmp/pprofotel-example-1", false, "go run ./cmd/pprofotel pprof -o /tmp/pprofotel-example-1/pprof -http=127.0.0.1:0 /tmp/pprofotel-example-1"},
		{"/tmp/my windows", false, "go run ./cmd/pprofotel pprof -o '/tmp/my windows/pprof' -http=127.0.0.1:0 '/tmp/my windows'"},
		{"/tmp/shared", true, "go run ./cmd/pprofotel pprof -from 2026-11-23T12:00:00.000000005Z -o /tmp/shared/pprof -http=127.0.0.1:0 /tmp/shared"},
	}
	for _, tt := range tests {
		if got := openCommand(tt.dir, start, tt.others); got != tt.want {
			t.Errorf("openCommand(%q, %v) =\n%s\nwant\n%s", tt.dir, tt.others, got, tt.want)
		}
	}
}
