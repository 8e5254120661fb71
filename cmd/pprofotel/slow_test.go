package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// slowWindow writes, into a new directory, one window holding the given
// profiles as the file exporter writes it, and returns the directory.
func slowWindow(t testing.TB, inputs ...otlp.Input) string {
	t.Helper()
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var n byte
	b := otlp.NewBuilder(nil, nil, otlp.WithProfileIDs(func() [16]byte { n++; return [16]byte{15: n} }))
	req := b.Build(start, start.Add(time.Minute), inputs)
	data, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "window.pb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSlow lists the slowest requests of a window's slow-request profile
// against golden output: durations, routes, ids, and the largest parts
// of each request with their shares, states, reasons, functions and the
// time before the trace.
func TestSlow(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	dir := slowWindow(t, otlp.Input{Name: "slowrequests", Profile: otlptest.SlowFixture(start)})
	for _, tt := range []struct {
		name   string
		args   []string
		golden string
	}{
		{"defaults", nil, "slow.golden"},
		{"the slowest, its largest part", []string{"-n", "1", "-top", "1"}, "slow-n1-top1.golden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"slow"}, tt.args...), dir)
			if err := run(args, nil, &stdout, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("output differs from %s:\n%s", path, stdout.String())
			}
		})
	}
}

// TestSlowRefuses checks the errors of the slow subcommand: windows with
// no slow-request profile, and bad flags.
func TestSlowRefuses(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	offcpu := slowWindow(t, otlp.Input{Name: "offcpu", Profile: otlptest.OffCPUFixture(start)})
	slow := slowWindow(t, otlp.Input{Name: "slowrequests", Profile: otlptest.SlowFixture(start)})
	noWall := otlptest.SlowFixture(start)
	noWall.SampleTypes = []pprofdecode.ValueType{{Type: "off_cpu", Unit: "nanoseconds"}}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{offcpu}, "no window of 1 requests matches the selection"},
		{[]string{"-n", "0", slow}, "-n and -top must be at least 1"},
		{[]string{"-top", "-1", slow}, "-n and -top must be at least 1"},
		{[]string{slowWindow(t, otlp.Input{Name: "slowrequests", Profile: noWall})}, "the slowrequests profile has no wall sample type"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(append([]string{"slow"}, tt.args...), nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("slow %v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
