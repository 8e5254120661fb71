package profiler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
)

var allTypes = []string{"cpu", "heap", "goroutine", "mutex", "block"}

// receiver collects the requests an OTLP endpoint gets.
type receiver struct {
	collectorpb.UnimplementedProfilesServiceServer
	mu       sync.Mutex
	requests []*collectorpb.ExportProfilesServiceRequest
	arrived  chan struct{}
}

func newReceiver() *receiver { return &receiver{arrived: make(chan struct{}, 100)} }

func (r *receiver) add(req *collectorpb.ExportProfilesServiceRequest) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	r.arrived <- struct{}{}
}

func (r *receiver) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	r.add(req)
	return &collectorpb.ExportProfilesServiceResponse{}, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1development/profiles" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected "+req.URL.Path+" "+req.Header.Get("Content-Type"), http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(req.Body)
	msg := new(collectorpb.ExportProfilesServiceRequest)
	if err := proto.Unmarshal(body, msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(msg)
	out, _ := proto.Marshal(&collectorpb.ExportProfilesServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	// A guard against a hang, not a timing assertion.
	deadline := time.After(60 * time.Second)
	for range n {
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("fewer than %d requests arrived", n)
		}
	}
}

// startReceiver serves protocol on loopback and returns its endpoint URL.
func startReceiver(t *testing.T, protocol string, r *receiver) string {
	t.Helper()
	switch protocol {
	case "grpc":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		collectorpb.RegisterProfilesServiceServer(srv, r)
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
		return "http://" + ln.Addr().String()
	default:
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

// workload makes every profile type record something until stop closes.
func workload(stop <-chan struct{}) {
	var mu sync.Mutex
	ch := make(chan []byte)
	go func() {
		for {
			select {
			case <-stop:
				close(ch)
				return
			case ch <- make([]byte, 4096):
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				x := 0
				for i := range 20000 {
					x += i * i
				}
				_ = x
				mu.Unlock()
			}
		}()
	}
	for b := range ch {
		_ = b
	}
}

// TestConfiguredOnlyThroughEnvironment starts the profiler with no options,
// as a service would with only environment variables, and checks what an
// OTLP receiver gets over each protocol.
func TestConfiguredOnlyThroughEnvironment(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			r := newReceiver()
			endpoint := startReceiver(t, protocol, r)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "env-only")
			t.Setenv("PPROFOTEL_WINDOW", "2s")
			t.Setenv("PPROFOTEL_CPU_DUTY_CYCLE", "100") // continuous: every window holds CPU samples
			t.Setenv("PPROFOTEL_PROFILES", "cpu,heap,goroutine,mutex,block")
			t.Setenv("PPROFOTEL_MUTEX_PROFILE_FRACTION", "1")
			t.Setenv("PPROFOTEL_BLOCK_PROFILE_RATE", "1")

			prevFraction := runtime.SetMutexProfileFraction(-1)
			p, err := Start()
			if err != nil {
				t.Fatal(err)
			}
			if got := runtime.SetMutexProfileFraction(-1); got != 1 {
				t.Errorf("mutex fraction while running = %d, want 1", got)
			}
			stop := make(chan struct{})
			go workload(stop)
			r.wait(t, 2) // two full periods
			close(stop)
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatal(err)
			}
			if got := runtime.SetMutexProfileFraction(-1); got != prevFraction {
				t.Errorf("mutex fraction after Stop = %d, want the previous %d", got, prevFraction)
			}

			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.requests) < 3 {
				t.Fatalf("got %d requests, want 2 periods and the partial window of Stop", len(r.requests))
			}
			buildID := wantBuildID(t)
			var prevEnd uint64
			for i, req := range r.requests {
				if err := otlptest.Validate(req); err != nil {
					t.Errorf("request %d breaks the v1development rules:\n%v", i, err)
				}
				if got := serviceName(req); got != "env-only" {
					t.Errorf("request %d: service.name = %q, want env-only", i, got)
				}
				if got := mainBuildID(req); got != buildID {
					t.Errorf("request %d: the main mapping's process.executable.build_id.go = %q, want %q", i, got, buildID)
				}
				if got := scopeNames(req); strings.Join(got, ",") != strings.Join(allTypes, ",") {
					t.Errorf("request %d: scopes %v, want %v", i, got, allTypes)
				}
				start, end := window(req)
				if i > 0 && start != prevEnd {
					t.Errorf("request %d starts at %d, the previous ended at %d: windows must be contiguous", i, start, prevEnd)
				}
				if i < 2 {
					if d := time.Duration(end - start); d < 1500*time.Millisecond || d > 10*time.Second {
						t.Errorf("request %d covers %v, want about the 2s period", i, d)
					}
				}
				prevEnd = end
			}
		})
	}
}

func serviceName(req *collectorpb.ExportProfilesServiceRequest) string {
	for _, kv := range req.GetResourceProfiles()[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func scopeNames(req *collectorpb.ExportProfilesServiceRequest) []string {
	var names []string
	for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
		for _, kv := range sp.GetScope().GetAttributes() {
			if kv.GetKey() == "pprofotel.profile.name" {
				names = append(names, kv.GetValue().GetStringValue())
			}
		}
	}
	return names
}

// window returns the start and end of the request's profiles, which all
// describe the same window.
func window(req *collectorpb.ExportProfilesServiceRequest) (start, end uint64) {
	for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
		for _, p := range sp.GetProfiles() {
			return p.GetTimeUnixNano(), p.GetTimeUnixNano() + p.GetDurationNano()
		}
	}
	return 0, 0
}

// recorder keeps every runtime profile the collector reads, so the test can
// compute what the runtime itself says about each window.
type recorder struct {
	mu   sync.Mutex
	raw  map[string][][]byte
	cpuW *bytes.Buffer
}

func (r *recorder) source(name string, w io.Writer) error {
	var buf bytes.Buffer
	if err := collect.RuntimeSource(name, &buf); err != nil {
		return err
	}
	r.mu.Lock()
	r.raw[name] = append(r.raw[name], bytes.Clone(buf.Bytes()))
	r.mu.Unlock()
	_, err := w.Write(buf.Bytes())
	return err
}

func (r *recorder) startCPU(w io.Writer) error {
	r.cpuW = new(bytes.Buffer)
	return pprof.StartCPUProfile(io.MultiWriter(w, r.cpuW))
}

func (r *recorder) stopCPU() {
	pprof.StopCPUProfile()
	r.mu.Lock()
	r.raw["cpu"] = append(r.raw["cpu"], bytes.Clone(r.cpuW.Bytes()))
	r.mu.Unlock()
}

// TestWindowsAreLossless converts what the profiler sent back to pprof and
// compares it, window by window, sample type by sample type and stack by
// stack, with the runtime's own profiles for the same window: the CPU
// profile recorded in the window, the difference of the cumulative
// profiles between the window's ends, the snapshots at its end.
func TestWindowsAreLossless(t *testing.T) {
	rec := &recorder{raw: map[string][][]byte{}}
	dir := t.TempDir()
	p, err := Start(shortWindows(), withRuntime(rec.source, collect.CPUProfiler{Start: rec.startCPU, Stop: rec.stopCPU}),
		WithWindow(300*time.Millisecond), WithCPUDutyCycle(100),
		WithProfileTypes(CPUProfile, HeapProfile, GoroutineProfile, MutexProfile, BlockProfile),
		WithMutexProfileFraction(1), WithBlockProfileRate(1),
		WithExporter(fileExporter(t, dir)),
	)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go workload(stop)
	poll(t, "three windows written", func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
		return len(files) >= 3
	})
	close(stop)
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	sort.Strings(files)
	cumulative := map[string]bool{"alloc_objects": true, "alloc_space": true, "contentions": true, "delay": true}
	checked := map[string]int{}
	for w, file := range files {
		reqs, err := pprofconv.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := otlptest.Validate(reqs[0].Request); err != nil {
			t.Fatalf("window %d: %v", w, err)
		}
		sent, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
		if err != nil {
			t.Fatalf("window %d: %v", w, err)
		}
		for _, name := range allTypes {
			got := sent[name]
			if got == nil {
				t.Fatalf("window %d: no %s profile", w, name)
			}
			goToolPprofTop(t, got, fmt.Sprintf("window%d-%s", w, pprofconv.FileName(name)))
			var want *gpprof.Profile
			switch name {
			case "cpu":
				want = parse(t, rec.raw["cpu"][w])
			case "goroutine":
				want = parse(t, rec.raw[name][w])
			default: // read once at Start, then once per window
				want = parse(t, rec.raw[name][w+1])
			}
			var before *gpprof.Profile
			if name == "heap" || name == "mutex" || name == "block" {
				before = parse(t, rec.raw[name][w])
			}
			// The profiler sends a request's route in place of its
			// root span id; a goroutine's route label (set while a
			// profiler runs) may be sent or replaced by the route the
			// request ended with. What is compared here is every stack
			// and value; the routes are TestCPUSamplesLinkToTheirSpans'.
			for _, s := range want.Sample {
				delete(s.Label, labels.LocalRootSpanIDKey)
				delete(s.Label, labels.RouteKey)
			}
			for _, s := range got.Sample {
				delete(s.Label, labels.RouteKey)
			}
			for i, st := range want.SampleType {
				wantTotals := otlptest.StackTotals(want, i)
				if before != nil && cumulative[st.Type] {
					for k, v := range otlptest.StackTotals(before, i) {
						wantTotals[k] -= v
					}
				}
				gi := sampleIndex(got, st.Type)
				if gi < 0 {
					t.Fatalf("window %d %s: sample type %s missing", w, name, st.Type)
				}
				gotTotals := otlptest.StackTotals(got, gi)
				drop0(wantTotals)
				drop0(gotTotals)
				// The runtime now and then reports a goroutine with no
				// frames at all; OTLP cannot express an empty stack, so
				// the builder leaves such samples out (package otlp doc).
				for k := range wantTotals {
					if strings.HasPrefix(k, "|") {
						delete(wantTotals, k)
					}
				}
				if !equal(gotTotals, wantTotals) {
					t.Errorf("window %d %s/%s: %d stacks sent, the runtime has %d; first difference: %s",
						w, name, st.Type, len(gotTotals), len(wantTotals), firstDiff(gotTotals, wantTotals))
				}
				checked[name+"/"+st.Type] += len(wantTotals)
			}
		}
	}
	for _, k := range []string{"cpu/cpu", "heap/alloc_space", "heap/inuse_space", "goroutine/goroutine", "mutex/delay", "block/delay"} {
		if checked[k] == 0 {
			t.Errorf("%s: no stack was compared in any window; the test proved nothing for it", k)
		}
	}
}

// goToolPprofTop writes p to a file named name and has go tool pprof -top
// read it, failing the test if pprof cannot.
func goToolPprofTop(t *testing.T, p *gpprof.Profile, name string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := pprofconv.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "tool", "pprof", "-top", path).CombinedOutput(); err != nil {
		t.Fatalf("go tool pprof -top %s: %v\n%s", name, err, out)
	}
}

func parse(t *testing.T, data []byte) *gpprof.Profile {
	t.Helper()
	p, err := gpprof.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sampleIndex(p *gpprof.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return -1
}

func drop0(m map[string]int64) {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func firstDiff(got, want map[string]int64) string {
	for k, v := range want {
		if got[k] != v {
			return k + ": sent " + itoa(got[k]) + ", runtime " + itoa(v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			return k + ": sent " + itoa(v) + ", runtime nothing"
		}
	}
	return ""
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// hangingEndpoint returns an HTTP endpoint that reads requests and never
// answers until the test ends.
func hangingEndpoint(t *testing.T) string {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/v1development/profiles"
}

// mainBuildID returns the process.executable.build_id.go of the mapping of
// the running executable.
func mainBuildID(req *collectorpb.ExportProfilesServiceRequest) string {
	d := req.GetDictionary()
	exe, _ := os.Executable()
	for _, m := range d.GetMappingTable() {
		if d.GetStringTable()[m.GetFilenameStrindex()] != exe {
			continue
		}
		for _, ai := range m.GetAttributeIndices() {
			a := d.GetAttributeTable()[ai]
			if d.GetStringTable()[a.GetKeyStrindex()] == "process.executable.build_id.go" {
				return a.GetValue().GetStringValue()
			}
		}
	}
	return ""
}

// wantBuildID is the test binary's Go build id as the go tool reports it.
func wantBuildID(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// stopContext is the context of a Stop that must deliver every window:
// on a busy machine that may take longer than Stop's default five
// seconds. Stop returns as soon as it is done; the deadline only bounds a
// hang.
func stopContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
