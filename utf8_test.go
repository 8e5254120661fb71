package profiler

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
)

// Strings that are not valid UTF-8, as an application and an operator can
// set them, and what the profiler must send instead.
const (
	invalidRoute  = "/caf\xe9"
	repairedRoute = "/caf\uFFFD"
	// OTEL_RESOURCE_ATTRIBUTES is percent-decoded: %FF%FE are two bytes
	// that start no UTF-8 sequence, one run, so one U+FFFD.
	invalidDeployment  = "%FF%FE"
	repairedDeployment = "\uFFFD"
)

// TestInvalidUTF8IsRepaired runs the profiler with a pprof label and a
// resource attribute from the environment that are not valid UTF-8, which
// proto3 refuses, through every exporter: every window must arrive, with
// the repaired strings, counted, and logged once each however many windows
// repeat them.
func TestInvalidUTF8IsRepaired(t *testing.T) {
	tests := []struct {
		name string
		// start returns the options of the exporter and a function that
		// returns what it delivered, once the profiler stopped.
		start func(t *testing.T) ([]Option, func() []*collectorpb.ExportProfilesServiceRequest)
	}{
		{"file protobuf", func(t *testing.T) ([]Option, func() []*collectorpb.ExportProfilesServiceRequest) {
			dir := t.TempDir()
			return []Option{WithExporter(fileExporter(t, dir))}, func() []*collectorpb.ExportProfilesServiceRequest {
				return readFiles(t, dir, "*.pb")
			}
		}},
		{"file JSON", func(t *testing.T) ([]Option, func() []*collectorpb.ExportProfilesServiceRequest) {
			dir := t.TempDir()
			return []Option{WithExporter(fileExporterJSON(t, dir))}, func() []*collectorpb.ExportProfilesServiceRequest {
				return readFiles(t, dir, "*.json")
			}
		}},
		{"OTLP gRPC", func(t *testing.T) ([]Option, func() []*collectorpb.ExportProfilesServiceRequest) {
			r := newReceiver()
			return []Option{WithExporter(grpcExporter(t, startReceiver(t, "grpc", r)))}, r.received
		}},
		{"OTLP HTTP", func(t *testing.T) ([]Option, func() []*collectorpb.ExportProfilesServiceRequest) {
			r := newReceiver()
			return []Option{WithExporter(httpExporter(t, startReceiver(t, "http", r)+"/v1development/profiles"))}, r.received
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment="+invalidDeployment+",team=payments")
			stop := labeledGoroutine(invalidRoute)
			defer close(stop)

			logs := &warnings{}
			opts, delivered := tt.start(t)
			p, err := Start(append(opts, shortWindows(), WithWindow(50*time.Millisecond), WithProfileTypes(GoroutineProfile),
				WithLogger(slog.New(logs)))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop(stopContext(t)) }) // when a check fails before Stop
			poll(t, "three windows exported", func() bool { return p.Stats().WindowsExported >= 3 })
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			s := checkAccounting(t, p)
			// A window refused for its strings fails; windows dropped to
			// bound the queue, when the machine is slow to send them, are
			// not this test's concern.
			if s.WindowsFailed != 0 {
				t.Errorf("%d windows failed, want none", s.WindowsFailed)
			}
			// The resource's attribute once, at Start, and the label in
			// the goroutine profile of every window.
			if want := 1 + s.WindowsCollected; s.StringsRepaired != want {
				t.Errorf("StringsRepaired = %d, want %d (the resource, then the label in each of %d windows)",
					s.StringsRepaired, want, s.WindowsCollected)
			}

			reqs := delivered()
			if int64(len(reqs)) != s.WindowsExported {
				t.Fatalf("%d requests delivered, Stats says %d windows exported", len(reqs), s.WindowsExported)
			}
			for i, req := range reqs {
				if err := otlptest.Validate(req); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				res := resourceAttrs(req)
				if res["deployment"] != repairedDeployment || res["team"] != "payments" {
					t.Errorf("request %d: resource deployment=%q team=%q, want %q and %q",
						i, res["deployment"], res["team"], repairedDeployment, "payments")
				}
				found := false
				for _, smp := range otlptest.Samples(req, "goroutine", "goroutine") {
					if smp.Attrs["route"] == repairedRoute && smp.InStack("labeledGoroutine.func1") {
						found = true
					}
				}
				if !found {
					t.Errorf("request %d: no goroutine sample labeled route=%q", i, repairedRoute)
				}
			}

			logs.mu.Lock()
			defer logs.mu.Unlock()
			var resourceLogs, profileLogs int
			for _, l := range logs.records {
				switch {
				case strings.Contains(l, "resource attributes that were not valid UTF-8"):
					resourceLogs++
					if !strings.Contains(l, "deployment") {
						t.Errorf("the resource's repair does not name the attribute: %s", l)
					}
				case strings.Contains(l, "strings of the profiles that were not valid UTF-8"):
					profileLogs++
					if !strings.Contains(l, repairedRoute) {
						t.Errorf("the profiles' repair does not show the string: %s", l)
					}
				}
			}
			if resourceLogs != 1 || profileLogs != 1 {
				t.Errorf("over %d windows, %d logs of the resource's repair and %d of the profiles', want 1 each:\n%s",
					s.WindowsCollected, resourceLogs, profileLogs, strings.Join(logs.records, "\n"))
			}
		})
	}
}

// labeledGoroutine starts a goroutine that carries the pprof label route
// until stop is closed.
func labeledGoroutine(route string) (stop chan struct{}) {
	stop = make(chan struct{})
	ready := make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels("route", route), func(context.Context) {
		close(ready)
		<-stop
	})
	<-ready
	return stop
}

// received returns the requests r got so far.
func (r *receiver) received() []*collectorpb.ExportProfilesServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*collectorpb.ExportProfilesServiceRequest(nil), r.requests...)
}

// readFiles reads the requests of the files in dir that match pattern, in
// the order written.
func readFiles(t *testing.T, dir, pattern string) []*collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, pattern))
	var out []*collectorpb.ExportProfilesServiceRequest
	for _, f := range files {
		reqs, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			out = append(out, r.Request)
		}
	}
	return out
}

// resourceAttrs returns the string attributes of req's resource.
func resourceAttrs(req *collectorpb.ExportProfilesServiceRequest) map[string]string {
	out := map[string]string{}
	for _, kv := range req.GetResourceProfiles()[0].GetResource().GetAttributes() {
		out[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return out
}

// warnings records the messages and attributes of warnings.
type warnings struct {
	mu      sync.Mutex
	records []string
}

func (h *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *warnings) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *warnings) WithGroup(string) slog.Handler                { return h }
func (h *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, b.String())
	h.mu.Unlock()
	return nil
}
