package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
	"google.golang.org/protobuf/proto"
)

const (
	testTraceID = "0af7651916cd43dd8448eb211c80319c"
	testSpanID  = "b7ad6b7169203331"
)

//go:noinline
func spinInSpan(d time.Duration) { cputest.Spin(d) }

//go:noinline
func spinOutside(d time.Duration) { cputest.Spin(d) }

//go:noinline
func spinInRequest(d time.Duration) { cputest.Spin(d) }

// requestTracer starts the workload's requests: local root spans of the
// real SDK through the label wrapper, so that their samples carry their
// route.
var requestTracer = labels.WrapTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))).Tracer("cmd-test")

// requestsRun counts the requests the workload ran.
var requestsRun atomic.Int64

var sink [][]byte

// workload spins inside and outside a span, allocates, contends and
// blocks, until stop is closed.
func workload(stop chan struct{}) {
	var mu sync.Mutex
	for {
		select {
		case <-stop:
			return
		default:
		}
		// Do restores the labels of the context it is given when f returns: the
		// span's labels are in force during spinInSpan only.
		pprof.Do(context.Background(), pprof.Labels(labels.TraceIDKey, testTraceID, labels.SpanIDKey, testSpanID),
			func(context.Context) { spinInSpan(20 * time.Millisecond) })
		spinOutside(10 * time.Millisecond)
		_, req := requestTracer.Start(context.Background(), "GET", trace.WithAttributes(attribute.String("http.route", "/spin")))
		spinInRequest(10 * time.Millisecond)
		req.End()
		requestsRun.Add(1)
		sink = append(sink[:0], make([]byte, 1<<16), make([]byte, 1<<10))
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock()
				time.Sleep(time.Millisecond)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
}

// profiledDir runs the profiler with the file exporter over workload until
// it has written at least n windows, and returns the directory.
func profiledDir(t *testing.T, n int) string {
	t.Helper()
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 512
	defer func() { runtime.MemProfileRate = old }()
	dir := t.TempDir()
	exp, err := otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiler.Start(
		profiler.WithServiceName("pprofotel-cmd-test"),
		profiler.WithWindow(time.Second), profiler.WithCPUDutyCycle(100),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile, profiler.MutexProfile, profiler.BlockProfile),
		profiler.WithMutexProfileFraction(1), profiler.WithBlockProfileRate(1),
		profiler.WithExporter(exp),
	)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { workload(stop); close(done) }()
	polltest.Until(t, fmt.Sprintf("%d windows written", n), func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
		return len(files) >= n
	})
	close(stop)
	<-done
	// Every window must arrive: Stop is given as long as a busy machine
	// needs to write the last one, not the default five seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goTool runs go tool pprof with args, failing the test if it fails.
func goToolPprof(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readProfile(t *testing.T, path string) *gpprof.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := gpprof.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// windowTotals converts each window alone and returns, per "profile/sample
// type", its stack totals; labels are dropped when noLabels is set.
func windowTotals(t *testing.T, reqs []pprofconv.Request, noLabels bool) []map[string]map[string]int64 {
	t.Helper()
	var out []map[string]map[string]int64
	for _, r := range reqs {
		profiles, _, err := pprofconv.Convert([]pprofconv.Request{r}, pprofconv.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		w := make(map[string]map[string]int64)
		for name, p := range profiles {
			if noLabels {
				for _, s := range p.Sample {
					s.Label, s.NumLabel, s.NumUnit = nil, nil, nil
				}
			}
			for i, st := range p.SampleType {
				w[name+"/"+st.Type] = otlptest.StackTotals(p, i)
			}
		}
		out = append(out, w)
	}
	return out
}

// TestPprofOfProfilerWindows converts what the profiler wrote with the
// command and checks that go tool pprof reads every file, that each file
// holds all its sample types (-sample_index=inuse_space), that span links
// are labels (-tagfocus), and so are routes, that the request counts
// are the requests run, and that the merged profiles are the sum of the
// windows, the snapshots aside, which are the last window's.
func TestPprofOfProfilerWindows(t *testing.T) {
	requestsRun.Store(0)
	dir := profiledDir(t, 3)
	out := filepath.Join(t.TempDir(), "pprof")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"pprof", "-o", out, dir}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("pprofotel pprof: %v\n%s", err, stderr.String())
	}
	t.Logf("pprofotel pprof:\n%s", stdout.String())

	reqs, err := pprofconv.ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	windows := windowTotals(t, reqs, false)
	snapshot := map[string]bool{"heap/inuse_objects": true, "heap/inuse_space": true, "goroutine/goroutine": true}
	wantTypes := map[string][]string{
		"cpu":       {"samples", "cpu"},
		"heap":      {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"},
		"goroutine": {"goroutine"},
		"mutex":     {"contentions", "delay"},
		"block":     {"contentions", "delay"},
		"requests":  {"requests"},
	}
	for name, types := range wantTypes {
		path := filepath.Join(out, name+".pb.gz")
		goToolPprof(t, "-top", path)
		p := readProfile(t, path)
		var got []string
		for _, st := range p.SampleType {
			got = append(got, st.Type)
		}
		if strings.Join(got, ",") != strings.Join(types, ",") {
			t.Errorf("%s sample types %v, want %v", name, got, types)
		}
		for i, st := range p.SampleType {
			k := name + "/" + st.Type
			want := make(map[string]int64)
			for w, wt := range windows {
				if snapshot[k] && w != len(windows)-1 {
					continue
				}
				for stack, v := range wt[k] {
					want[stack] += v
				}
			}
			gotTotals := otlptest.StackTotals(p, i)
			if len(want) == 0 && (k == "cpu/cpu" || k == "heap/alloc_space" || k == "heap/inuse_space" || k == "mutex/delay") {
				t.Errorf("%s: no stack in any window; the test proves nothing for it", k)
			}
			if len(gotTotals) != len(want) {
				t.Errorf("%s: %d stacks merged, the windows have %d", k, len(gotTotals), len(want))
			}
			for stack, v := range want {
				if gotTotals[stack] != v {
					t.Errorf("%s %s: merged %d, windows %d", k, stack, gotTotals[stack], v)
					break
				}
			}
		}
	}
	heap := filepath.Join(out, "heap.pb.gz")
	if top := goToolPprof(t, "-top", "-sample_index=inuse_space", heap); !strings.Contains(top, "Type: inuse_space") {
		t.Errorf("go tool pprof -sample_index=inuse_space does not show inuse_space:\n%s", top)
	}
	cpu := filepath.Join(out, "cpu.pb.gz")
	top := goToolPprof(t, "-top", "-tagfocus", "span_id="+testSpanID, cpu)
	if !strings.Contains(top, "spinInSpan") || strings.Contains(top, "spinOutside") {
		t.Errorf("go tool pprof -tagfocus span_id=%s should show spinInSpan and not spinOutside:\n%s", testSpanID, top)
	}
	top = goToolPprof(t, "-top", "-tagfocus", "route=/spin", cpu)
	if !strings.Contains(top, "spinInRequest") || strings.Contains(top, "spinOutside") || strings.Contains(top, "spinInSpan") {
		t.Errorf("go tool pprof -tagfocus route=/spin should show spinInRequest alone:\n%s", top)
	}
	// The request counts: every request the workload ran, under its
	// route, listed by go tool pprof -top.
	reqCounts := readProfile(t, filepath.Join(out, "requests.pb.gz"))
	var counted int64
	for _, s := range reqCounts.Sample {
		if s.Label["route"][0] != "/spin" || s.Location[0].Line[0].Function.Name != "/spin" {
			t.Errorf("request sample of route %v on %s", s.Label["route"], s.Location[0].Line[0].Function.Name)
		}
		counted += s.Value[0]
	}
	if n := requestsRun.Load(); counted != n || n == 0 {
		t.Errorf("%d requests counted, the workload ran %d", counted, n)
	}
	if top := goToolPprof(t, "-top", filepath.Join(out, "requests.pb.gz")); !strings.Contains(top, "/spin") {
		t.Errorf("go tool pprof -top does not list the route /spin:\n%s", top)
	}
}

// TestPGO writes the PGO profile of the windows after the first and checks
// that it holds their CPU samples merged, then builds a program with it.
func TestPGO(t *testing.T) {
	dir := profiledDir(t, 3)
	reqs, err := pprofconv.ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	// From the end of the first window: the first is left out.
	first := readProfile(t, writeOne(t, reqs[0]))
	from := time.Unix(0, first.TimeNanos+first.DurationNanos).UTC().Format(time.RFC3339Nano)
	pgo := filepath.Join(t.TempDir(), "default.pgo")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"pgo", "-o", pgo, "-from", from, dir}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("pprofotel pgo: %v\n%s", err, stderr.String())
	}
	p := readProfile(t, pgo)
	for i, st := range p.SampleType {
		want := make(map[string]int64)
		for _, wt := range windowTotals(t, reqs[1:], true) {
			for stack, v := range wt["cpu/"+st.Type] {
				want[stack] += v
			}
		}
		got := otlptest.StackTotals(p, i)
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s: %d stacks in the PGO profile, %d in the windows after the first", st.Type, len(got), len(want))
		}
		for stack, v := range want {
			if got[stack] != v {
				t.Errorf("%s %s: PGO profile %d, windows %d", st.Type, stack, got[stack], v)
				break
			}
		}
	}
	for _, s := range p.Sample {
		if len(s.Label) > 0 {
			t.Fatalf("PGO profile sample has labels %v", s.Label)
		}
	}

	prog := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":  "module pgotest\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(prog, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-pgo="+pgo, "-o", filepath.Join(prog, "hello"), ".")
	build.Dir = prog
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -pgo=%s: %v\n%s", pgo, err, out)
	}
}

// writeOne converts one window's CPU profile to a file and returns its path.
func writeOne(t *testing.T, r pprofconv.Request) string {
	t.Helper()
	profiles, _, err := pprofconv.Convert([]pprofconv.Request{r}, pprofconv.Filter{Profiles: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if err := pprofconv.WriteFile(path, profiles["cpu"]); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInput checks that the command names the file and what is wrong,
// and leaves no output behind.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"text.pb":        "hello",
		"truncated.json": `{"resourceProfiles": [{"scopeProfiles": [`,
		"nototlp.json":   `{"hello": "world"}`,
		// The Collector's format proto, a request of 4096 bytes announced.
		"collector.pb": "\x00\x00\x10\x00hello",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args    []string
		stdin   string
		wantErr string
	}{
		{[]string{"pprof", filepath.Join(dir, "text.pb")}, "", filepath.Join(dir, "text.pb") + ": not an OTLP profiles request in protobuf, or truncated"},
		{[]string{"pprof", filepath.Join(dir, "truncated.json")}, "", filepath.Join(dir, "truncated.json") + ":1: truncated"},
		{[]string{"pgo", filepath.Join(dir, "collector.pb")}, "", filepath.Join(dir, "collector.pb") + "@0: truncated, or not the length-prefixed protobuf of a Collector's file exporter: the length at offset 0 says 4096 bytes, 5 follow"},
		{[]string{"pgo", filepath.Join(dir, "nototlp.json")}, "", filepath.Join(dir, "nototlp.json") + ":1: holds no resource profiles"},
		{[]string{"pprof", "-"}, "\x1f\x8b\x08", "standard input: gzip-compressed"},
		{[]string{"pprof", filepath.Join(dir, "missing")}, "", "stat " + filepath.Join(dir, "missing")},
		{[]string{"pprof"}, "", "no PATH given"},
		{[]string{"pprof", "-from", "yesterday", dir}, "", `-from "yesterday": want an RFC 3339 time`},
		{[]string{"flame"}, "", `unknown subcommand "flame"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{tt.args[0], "-o", filepath.Join(out, "x")}, tt.args[1:]...)
			if tt.args[0] == "flame" {
				args = tt.args
			}
			var stdout, stderr bytes.Buffer
			err := run(args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if entries, _ := os.ReadDir(out); len(entries) > 0 {
				t.Errorf("left %d files behind in the output directory", len(entries))
			}
		})
	}
}

// TestProfilerWindowsWithinBudget checks that the profiler's own windows
// stay far within pprofconv's expansion budget: the pprof form of each
// holds at most one unit (a location or sample value, an eighth of a label
// value) per byte of its OTLP encoding, an eighth of what Convert accepts.
// pprofconv.ExpansionPerByte documents the figure this measures.
func TestProfilerWindowsWithinBudget(t *testing.T) {
	reqs, err := pprofconv.ReadPath(profiledDir(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		profiles, _, err := pprofconv.Convert([]pprofconv.Request{r}, pprofconv.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		units := 0
		for _, p := range profiles {
			for _, s := range p.Sample {
				units += 1 + len(s.Value) + len(s.Location)
				// A label value counts 8.
				for _, v := range s.Label {
					units += 8 * len(v)
				}
				for _, v := range s.NumLabel {
					units += 8 * len(v)
				}
			}
		}
		size := proto.Size(r.Request)
		if units == 0 || units > size {
			t.Errorf("%s: %d units of pprof for %d bytes of OTLP, want between 1 and one per byte", r.Source, units, size)
		}
		t.Logf("%s: %d bytes, %d units, %.2f per byte", filepath.Base(r.Source), size, units, float64(units)/float64(size))
	}
}
