package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pprofprofile "github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
)

// pyroscopeTypes are the profile types Pyroscope lists for a service that
// sends all six profiles and the request counts of its spans: one per
// Profile the profiler sends, named, as
// Pyroscope names them, name:sample type:unit:period type:unit, where the
// name is the period type, samples/count over a cpu/nanoseconds period
// becomes process_cpu in nanoseconds, and off_cpu/nanoseconds without a
// period is Pyroscope's off_cpu.
var pyroscopeTypes = []string{
	"block_contentions:block_contentions:count:block_contentions:count",
	"block_contentions:block_delay:nanoseconds:block_contentions:count",
	"goroutine:goroutine:count:goroutine:count",
	"mutex_contentions:mutex_contentions:count:mutex_contentions:count",
	"mutex_contentions:mutex_delay:nanoseconds:mutex_contentions:count",
	offCPUType,
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds",
	requestsType,
	"space:alloc_objects:count:space:bytes",
	"space:alloc_space:bytes:space:bytes",
	"space:inuse_objects:count:space:bytes",
	"space:inuse_space:bytes:space:bytes",
}

// ordinaryAttributes are the resource attributes a service on Kubernetes
// in a cloud typically adds.
func ordinaryAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("k8s.namespace.name", "shop"),
		attribute.String("k8s.pod.name", "checkout-7d9f8b6c5-x2x4z"),
		attribute.String("k8s.pod.uid", "3b1f5c2e-8f9a-4d2b-9c1e-0a7b6c5d4e3f"),
		attribute.String("k8s.deployment.name", "checkout"),
		attribute.String("k8s.node.name", "node-pool-a-1234"),
		attribute.String("k8s.container.name", "app"),
		attribute.String("container.id", "a3f5c1e9b7d24f6a8c0e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d1f3a"),
		attribute.String("cloud.provider", "gcp"),
		attribute.String("cloud.region", "europe-west1"),
		attribute.String("cloud.availability_zone", "europe-west1-b"),
		attribute.String("service.version", "1.4.2"),
		attribute.String("deployment.environment.name", "production"),
	}
}

// TestPyroscope sends the profiles of a workload through a recording proxy
// to a real Grafana Pyroscope, over gRPC and over HTTP/protobuf, and checks
// what Pyroscope stored against what was sent: the totals of every profile
// type in every window, one profile type per Profile sent (mutex and block
// apart, CPU once), one series per profile type however many allocation
// sizes the heap profile saw, the CPU of single spans, a service with a
// dozen ordinary resource attributes accepted, and one with forty rejected
// as it should be: logged once, counted, not retried.
func TestPyroscope(t *testing.T) {
	py := startPyroscope(t)
	proxy := startRecordingProxy(t, strings.TrimPrefix(py.URL, "http://"), py.URL)
	for _, tt := range []struct {
		protocol protocol
		route    string
	}{
		{protocolGRPC, proxy.GRPCAddr},
		{protocolHTTPProtobuf, proxy.HTTPAddr},
	} {
		t.Run(string(tt.protocol), func(t *testing.T) {
			t.Run("accepted", func(t *testing.T) {
				run := runForPyroscope(t, proxy, tt.protocol, tt.route, ordinaryAttributes(), true, time.Second, 3*time.Second+time.Second/2, enoughSpans)
				checkAccepted(t, run)
				checkPyroscopeTotals(t, py, run)
				checkProfileTypes(t, py, run)
				checkSeriesCount(t, py, run)
				checkSpanCPU(t, py, run)
			})
			t.Run("rejected", func(t *testing.T) {
				var attrs []attribute.KeyValue
				for i := range 40 {
					attrs = append(attrs, attribute.String(fmt.Sprintf("extra.attribute.%02d", i), "x"))
				}
				// Windows of the shortest length the profiler takes,
				// two full ones and a partial one: three rejections,
				// of which one is logged.
				run := runForPyroscope(t, proxy, tt.protocol, tt.route, attrs, false, time.Second, 2*time.Second+time.Second/2, nil)
				checkRejected(t, run)
			})
		})
	}
}

// pyroscopeRun is what one profiled run sent and how the profiler saw it.
type pyroscopeRun struct {
	service          string
	started, stopped time.Time
	exchanges        []exchange // the run's, in the order sent
	stats            profiler.Stats
	logs             *syncBuffer
}

// runForPyroscope profiles the workload for runFor, with windows of
// period, exporting to route; with allocate, an allocator of many
// distinct large sizes runs alongside. When enough is not nil the run goes
// on past runFor, window after window, until enough holds for the
// exchanges of the run so far (on a busy machine the workload gets less
// CPU, and the windows fewer samples), for at most a minute.
func runForPyroscope(t *testing.T, proxy *recordingProxy, protocol protocol, route string, attrs []attribute.KeyValue, allocate bool, period, runFor time.Duration, enough func([]exchange) bool) *pyroscopeRun {
	t.Helper()
	run := &pyroscopeRun{
		service: strings.NewReplacer("/", "-", " ", "-").Replace("pprofotel-" + t.Name()),
		logs:    new(syncBuffer),
	}
	tracer, _ := startTracedRun(t, run.logs)

	run.started = time.Now()
	p, err := profiler.Start(append(allProfilesOptions(t, run.service, protocol, route, period, run.logs),
		profiler.WithResource(resource.NewSchemaless(attrs...)))...)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkload(tracer)
	// A second span loop, so that more than 50 spans get CPU samples.
	stopSpans, spansDone := make(chan struct{}), make(chan struct{})
	go func() { spanLoop(stopSpans, tracer); close(spansDone) }()
	if allocate {
		allocLargeSizes(distinctLargeSizes)
		// The heap profile shows allocations as of the last completed
		// garbage collection.
		runtime.GC()
	}
	time.Sleep(time.Until(run.started.Add(runFor)))
	if enough != nil {
		waitExchanges(t, proxy, run.service, enough)
	}

	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	stopErr := p.Stop(ctx)
	close(stopSpans)
	<-spansDone
	w.Stop()
	run.stats = p.Stats()
	if stopErr != nil && run.stats.WindowsFailed == 0 {
		t.Fatalf("Stop: %v", stopErr)
	}
	for _, x := range proxy.recorded() {
		if requestService(x.req) == run.service {
			run.exchanges = append(run.exchanges, x)
		}
	}
	if len(run.exchanges) < 2 {
		t.Fatalf("the proxy saw %d requests of %s; want at least 2", len(run.exchanges), run.service)
	}
	return run
}

// waitExchanges waits until enough holds for the exchanges of service
// that proxy recorded, checking at each new one, for at most a minute.
func waitExchanges(t *testing.T, proxy *recordingProxy, service string, enough func([]exchange) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	seen := -1
	for time.Now().Before(deadline) {
		var mine []exchange
		for _, x := range proxy.recorded() {
			if requestService(x.req) == service {
				mine = append(mine, x)
			}
		}
		if len(mine) != seen {
			if enough(mine) {
				return
			}
			seen = len(mine)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Log("the run's windows did not reach what the test needs within a minute; checking what came")
}

// distinctLargeSizes is how many distinct sizes allocLargeSizes allocates:
// enough that, with the runtime sampling one allocation per 512 KiB on
// average, its heap profile holds more than 1,000 distinct sizes.
const distinctLargeSizes = 1200

// allocLargeSizes allocates once each size of 5 to n+4 pages: large
// objects, which the runtime sizes in whole pages, so that each is a size
// of its own in the heap profile's bytes label. Largest first, so that
// each fits where the one before was freed (half the time of fresh pages).
//
//go:noinline
func allocLargeSizes(n int) (total int) {
	for i := range n {
		b := make([]byte, (5+n-1-i)*8192)
		total += len(b)
	}
	return total
}

func requestService(req *collectorpb.ExportProfilesServiceRequest) string {
	return serviceName(&profilespb.ProfilesData{ResourceProfiles: req.GetResourceProfiles(), Dictionary: req.GetDictionary()})
}

// pyroscopeProfileType is the profile type Pyroscope files a Profile under,
// and the factor it multiplies its values by.
func pyroscopeProfileType(d dict, p *profilespb.Profile) (string, int64, error) {
	st, err := d.valueType(p.GetSampleType())
	if err != nil {
		return "", 0, err
	}
	pt, err := d.valueType(p.GetPeriodType())
	if err != nil {
		return "", 0, err
	}
	if st.Type == "samples" && st.Unit == "count" && pt.Type == "cpu" && pt.Unit == "nanoseconds" {
		return "process_cpu:cpu:nanoseconds:cpu:nanoseconds", p.GetPeriod(), nil
	}
	if st.Type == "off_cpu" && st.Unit == "nanoseconds" && p.GetPeriod() == 0 {
		// Pyroscope's own name for the OpenTelemetry eBPF profiler's
		// off-CPU type, which has no period.
		return "off_cpu:off_cpu:nanoseconds::", 1, nil
	}
	return strings.Join([]string{pt.Type, st.Type, st.Unit, pt.Type, pt.Unit}, ":"), 1, nil
}

// sentTotals returns, per Pyroscope profile type and window start (Unix
// ns), the total the run sent, in Pyroscope's units; it fails the test if a
// profile type of a window came in two Profiles, or a window in two
// requests.
func sentTotals(t *testing.T, run *pyroscopeRun) (map[string]map[uint64]int64, []uint64) {
	t.Helper()
	totals := make(map[string]map[uint64]int64)
	seen := make(map[string]bool)
	var windows []uint64
	for _, x := range run.exchanges {
		pd := &profilespb.ProfilesData{ResourceProfiles: x.req.GetResourceProfiles(), Dictionary: x.req.GetDictionary()}
		start, _ := windowBounds(pd)
		if slices.Contains(windows, start) {
			t.Errorf("window %d was sent in two requests", start)
		}
		windows = append(windows, start)
		d := dict{pd.GetDictionary()}
		for _, rp := range pd.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					id, scale, err := pyroscopeProfileType(d, p)
					if err != nil {
						t.Fatal(err)
					}
					key := fmt.Sprint(id, p.GetTimeUnixNano())
					if seen[key] {
						t.Errorf("window %d: two Profiles of %s: stored twice", p.GetTimeUnixNano(), id)
					}
					seen[key] = true
					if totals[id] == nil {
						totals[id] = make(map[uint64]int64)
					}
					// A sample with timestamps holds a value per
					// event, which Pyroscope adds up.
					for _, s := range p.GetSamples() {
						for _, v := range s.GetValues() {
							totals[id][p.GetTimeUnixNano()] += v * scale
						}
					}
				}
			}
		}
	}
	return totals, windows
}

// checkAccepted checks that Pyroscope accepted every window of the run and
// that the profiler counted them so.
func checkAccepted(t *testing.T, run *pyroscopeRun) {
	t.Helper()
	for i, x := range run.exchanges {
		if x.rejection != "" {
			t.Errorf("request %d of %d rejected: %s", i, len(run.exchanges), x.rejection)
		}
	}
	s := run.stats
	if s.WindowsFailed != 0 || s.WindowsExported != s.WindowsCollected || s.WindowsExported != int64(len(run.exchanges)) {
		t.Errorf("stats: %d windows collected, %d exported, %d failed; the proxy saw %d requests", s.WindowsCollected, s.WindowsExported, s.WindowsFailed, len(run.exchanges))
	}
}

type flamegraphResponse struct {
	Flamegraph struct {
		Total string `json:"total"`
	} `json:"flamegraph"`
}

func (f flamegraphResponse) total(t *testing.T) int64 {
	if f.Flamegraph.Total == "" {
		return 0
	}
	v, err := strconv.ParseInt(f.Flamegraph.Total, 10, 64)
	if err != nil {
		t.Fatalf("flamegraph total %q: %v", f.Flamegraph.Total, err)
	}
	return v
}

func (run *pyroscopeRun) selector() string {
	return fmt.Sprintf("{service_name=%q}", run.service)
}

// queryRange is the run's time range in Unix milliseconds, with a margin.
func (run *pyroscopeRun) queryRange() (start, end int64) {
	return run.started.Add(-time.Minute).UnixMilli(), run.stopped.Add(time.Minute).UnixMilli()
}

// checkPyroscopeTotals checks, for every profile type and every window,
// that Pyroscope's total (SelectMergeStacktraces over the window's
// millisecond) equals what was sent, and that its series over the run
// (SelectSeries) add up to what was sent.
func checkPyroscopeTotals(t *testing.T, py *pyroscope, run *pyroscopeRun) {
	t.Helper()
	checkPyroscopeTotalsOf(t, py, run, pyroscopeTypes)
}

// checkPyroscopeTotalsOf is checkPyroscopeTotals for a run that sent the
// profile types types, sorted.
func checkPyroscopeTotalsOf(t *testing.T, py *pyroscope, run *pyroscopeRun, types []string) {
	t.Helper()
	sent, windows := sentTotals(t, run)
	if got := slices.Sorted(maps.Keys(sent)); !slices.Equal(got, types) {
		t.Errorf("profile types sent %q, want %q", got, types)
	}
	for _, id := range types {
		var runTotal int64
		for _, w := range windows {
			want := sent[id][w]
			runTotal += want
			ms := int64(w / 1e6)
			var fg flamegraphResponse
			py.query(t, "SelectMergeStacktraces", map[string]any{
				"profile_typeID": id, "label_selector": run.selector(), "start": ms, "end": ms + 1,
			}, &fg)
			if got := fg.total(t); got != want {
				t.Errorf("%s, window at %d: Pyroscope's total %d, sent %d", id, w, got, want)
			}
		}
		if runTotal == 0 {
			t.Errorf("%s: nothing was sent in any window; the comparison proved nothing", id)
		}
		start, end := run.queryRange()
		var series struct {
			Series []struct {
				Points []struct {
					Value float64 `json:"value"`
				} `json:"points"`
			} `json:"series"`
		}
		py.query(t, "SelectSeries", map[string]any{
			"profile_typeID": id, "label_selector": run.selector(), "start": start, "end": end, "step": 1.0,
		}, &series)
		var got float64
		for _, s := range series.Series {
			for _, p := range s.Points {
				got += p.Value
			}
		}
		if int64(got) != runTotal {
			t.Errorf("%s: SelectSeries adds up to %v over the run, sent %d", id, got, runTotal)
		}
	}
}

// checkProfileTypes checks that Pyroscope lists exactly one profile type per
// Profile sent: mutex and block as types of their own, CPU once.
func checkProfileTypes(t *testing.T, py *pyroscope, run *pyroscopeRun) {
	t.Helper()
	checkProfileTypesOf(t, py, run, pyroscopeTypes)
}

// checkProfileTypesOf is checkProfileTypes for a run that sent the profile
// types types, sorted.
func checkProfileTypesOf(t *testing.T, py *pyroscope, run *pyroscopeRun, types []string) {
	t.Helper()
	start, end := run.queryRange()
	var resp struct {
		ProfileTypes []struct {
			ID string `json:"ID"`
		} `json:"profileTypes"`
	}
	py.query(t, "ProfileTypes", map[string]any{"start": start, "end": end}, &resp)
	var got []string
	for _, pt := range resp.ProfileTypes {
		got = append(got, pt.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, types) {
		t.Errorf("Pyroscope lists profile types %q, want %q", got, types)
	}
}

// checkSeriesCount checks that each profile type of the service is one
// series, although the heap profile saw more than 1,000 distinct allocation
// sizes, and that the service's resource attributes are its labels.
func checkSeriesCount(t *testing.T, py *pyroscope, run *pyroscopeRun) {
	t.Helper()
	n := heapSizes(t, funcName(allocLargeSizes))
	if n < 1000 {
		t.Fatalf("the runtime's heap profile holds %d distinct sizes allocated by allocLargeSizes; want at least 1,000 for the test to mean anything", n)
	}
	t.Logf("the runtime's heap profile holds %d distinct sizes allocated by allocLargeSizes", n)
	start, end := run.queryRange()
	for _, id := range pyroscopeTypes {
		var resp struct {
			LabelsSet []struct {
				Labels []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"labels"`
			} `json:"labelsSet"`
		}
		py.query(t, "Series", map[string]any{
			"matchers": []string{fmt.Sprintf("{service_name=%q,__profile_type__=%q}", run.service, id)},
			"start":    start, "end": end,
		}, &resp)
		// Pyroscope makes sample labels series labels (span ids
		// aside): one series per wait_reason and route sent, sets
		// the runtime and WithMaxRoutes bound.
		want := sentSeriesLabels(t, run, id)
		if len(resp.LabelsSet) != len(want) {
			t.Errorf("%s: %d series, want %d: %v", id, len(resp.LabelsSet), len(want), want)
			continue
		}
		for _, set := range resp.LabelsSet {
			found := false
			var own []string
			for _, l := range set.Labels {
				found = found || l.Name == "k8s.pod.name" && l.Value == "checkout-7d9f8b6c5-x2x4z"
				if slices.Contains(seriesSampleLabels, l.Name) {
					own = append(own, l.Name+"="+l.Value)
				}
			}
			if !found {
				t.Errorf("%s: the series lacks the label k8s.pod.name: %v", id, set.Labels)
			}
			if key := strings.Join(own, ","); !want[key] {
				t.Errorf("%s: a series with sample labels %q, sent %v", id, key, want)
			}
		}
	}
}

// The Pyroscope types of the off-CPU profile, of the request counts and of
// the slow-request profile.
const (
	offCPUType   = "off_cpu:off_cpu:nanoseconds::"
	requestsType = "requests:requests:count:requests:count"
	slowType     = "wall:wall:nanoseconds:wall:nanoseconds"
)

// seriesSampleLabels are the sample attributes the profiler sends that
// Pyroscope makes series labels, in the order Pyroscope lists labels.
var seriesSampleLabels = []string{"route", "wait_reason"}

// sentSeriesLabels returns the combinations of seriesSampleLabels that
// the samples of Pyroscope profile type id carried in what the run sent,
// each spelled name=value,... as checkSeriesCount reads them from a
// series ("" for none).
func sentSeriesLabels(t *testing.T, run *pyroscopeRun, id string) map[string]bool {
	t.Helper()
	sets := make(map[string]bool)
	for _, x := range run.exchanges {
		d := x.req.GetDictionary()
		str := d.GetStringTable()
		for _, rp := range x.req.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					if got, _, err := pyroscopeProfileType(dict{d}, p); err != nil || got != id {
						continue
					}
					for _, s := range p.GetSamples() {
						own := map[string]string{}
						for _, ai := range s.GetAttributeIndices() {
							a := d.GetAttributeTable()[ai]
							if k := str[a.GetKeyStrindex()]; slices.Contains(seriesSampleLabels, k) {
								own[k] = a.GetValue().GetStringValue()
							}
						}
						var key []string
						for _, k := range seriesSampleLabels {
							if v, ok := own[k]; ok {
								key = append(key, k+"="+v)
							}
						}
						sets[strings.Join(key, ",")] = true
					}
				}
			}
		}
	}
	if id == offCPUType && len(sets) == 0 {
		t.Errorf("no off-CPU sample was sent")
	}
	return sets
}

// heapSizes returns the number of distinct values of the bytes label among
// the runtime's heap profile samples whose stack holds fn.
func heapSizes(t *testing.T, fn string) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := pprofprofile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make(map[int64]bool)
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil && ln.Function.Name == fn {
					for _, v := range s.NumLabel["bytes"] {
						sizes[v] = true
					}
				}
			}
		}
	}
	return len(sizes)
}

// checkSpanCPU checks, for 50 spans, that the CPU Pyroscope finds for the
// span's id equals the CPU linked to that span in what was sent.
func checkSpanCPU(t *testing.T, py *pyroscope, run *pyroscopeRun) {
	t.Helper()
	bySpan, err := cpuBySpan(run.exchanges)
	if err != nil {
		t.Fatal(err)
	}
	spans := slices.Sorted(maps.Keys(bySpan))
	if len(spans) < 50 {
		t.Fatalf("CPU samples link to %d spans; want at least 50", len(spans))
	}
	start, end := run.queryRange()
	for _, span := range spans[:50] {
		var fg flamegraphResponse
		py.query(t, "SelectMergeSpanProfile", map[string]any{
			"profile_typeID": "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "label_selector": run.selector(),
			"start": start, "end": end, "span_selector": []string{span},
		}, &fg)
		if got := fg.total(t); got != bySpan[span] {
			t.Errorf("span %s: Pyroscope finds %d ns of CPU, %d were sent linked to it", span, got, bySpan[span])
		}
	}
}

// enoughSpans reports whether the CPU samples of exchanges link to at
// least the 50 spans checkSpanCPU checks.
func enoughSpans(exchanges []exchange) bool {
	bySpan, err := cpuBySpan(exchanges)
	return err != nil || len(bySpan) >= 50
}

// cpuBySpan returns the CPU time, in nanoseconds, that the CPU profiles of
// exchanges link to each span, by span id in hex.
func cpuBySpan(exchanges []exchange) (map[string]int64, error) {
	bySpan := make(map[string]int64)
	for _, x := range exchanges {
		d := dict{x.req.GetDictionary()}
		pd := &profilespb.ProfilesData{ResourceProfiles: x.req.GetResourceProfiles(), Dictionary: x.req.GetDictionary()}
		for _, p := range profilesOf(pd, "cpu") {
			id, scale, err := pyroscopeProfileType(d, p)
			if err != nil {
				return nil, err
			}
			if id != "process_cpu:cpu:nanoseconds:cpu:nanoseconds" {
				continue
			}
			for _, s := range p.GetSamples() {
				if s.GetLinkIndex() == 0 {
					continue
				}
				l, err := d.link(s.GetLinkIndex())
				if err != nil {
					return nil, err
				}
				bySpan[hex.EncodeToString(l.GetSpanId())] += s.GetValues()[0] * scale
			}
		}
	}
	return bySpan, nil
}

// checkRejected checks a run whose every window Pyroscope refused: each
// window sent once, never retried, counted as failed, and Pyroscope's
// reason logged once.
func checkRejected(t *testing.T, run *pyroscopeRun) {
	t.Helper()
	_, windows := sentTotals(t, run)
	for i, x := range run.exchanges {
		if x.rejection == "" {
			t.Fatalf("request %d with 40 extra attributes was accepted", i)
		}
	}
	const reason = "limit 30"
	if !strings.Contains(run.exchanges[0].rejection, reason) {
		t.Fatalf("Pyroscope rejected the request with %q, which does not name the label limit (%q)", run.exchanges[0].rejection, reason)
	}
	s := run.stats
	if s.ExportRetries != 0 || s.WindowsFailed != s.WindowsCollected || s.WindowsFailed != int64(len(windows)) || s.WindowsExported != 0 {
		t.Errorf("stats: %d windows collected, %d failed, %d exported, %d retries; the proxy saw %d windows once each",
			s.WindowsCollected, s.WindowsFailed, s.WindowsExported, s.ExportRetries, len(windows))
	}
	var logged int
	for _, line := range strings.Split(run.logs.String(), "\n") {
		if strings.Contains(line, reason) {
			logged++
		}
	}
	// The first failure is logged with its reason, the rest counted in
	// a summary at most once a minute.
	if logged != 1 {
		t.Errorf("Pyroscope's reason %q is in %d log lines for %d rejected windows; want exactly one", reason, logged, len(windows))
	}
}
