package profiler

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestFileRetention runs the file exporter with a bound of three files in
// a directory that holds files of an earlier run and a file of the
// application's: the earlier run's files go first, then the oldest of this
// run's, each removal is counted in Stats and its metric and logged, and
// the application's file stays.
func TestFileRetention(t *testing.T) {
	allowShortDurations(t)
	dir := t.TempDir()
	earlier := []string{
		"profiles-20200101T000000.000000000Z-4242.pb",
		"profiles-20200101T000001.000000000Z-4242.json",
	}
	for _, name := range append([]string{"notes.txt"}, earlier...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := &countingHandler{}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	const keep = 3
	p, err := Start(WithExporter(ExporterFile), WithFileDir(dir), WithFileRetention(keep, 0),
		WithProfileTypes(GoroutineProfile), WithProcessContext(false), WithPeriod(20*time.Millisecond),
		WithMeterProvider(mp), WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "files removed", func() bool { return p.Stats().FilesRemoved >= int64(len(earlier))+2 })
	metrics, _ := readMetrics(t, reader)
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	s := checkAccounting(t, p)

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := regexp.MustCompile(`^profiles-\d{8}T\d{6}\.\d{9}Z-\d+\.pb$`)
	var names, kept []string
	for _, de := range entries {
		names = append(names, de.Name())
		if own.MatchString(de.Name()) {
			kept = append(kept, de.Name())
		}
	}
	if !slices.Contains(names, "notes.txt") {
		t.Errorf("the application's file was removed: %q", names)
	}
	for _, name := range earlier {
		if slices.Contains(names, name) {
			t.Errorf("%s of an earlier run was kept while newer files were removed: %q", name, names)
		}
	}
	if len(kept) != keep || len(names) != keep+1 {
		t.Errorf("the directory holds %q; want %d profile files and notes.txt", names, keep)
	}
	// Every window wrote a file; all but the kept ones, and the earlier
	// run's, were removed.
	if want := s.WindowsExported + int64(len(earlier)) - keep; s.FilesRemoved != want {
		t.Errorf("FilesRemoved = %d, want %d (%d windows written, %d files of an earlier run, %d kept)",
			s.FilesRemoved, want, s.WindowsExported, len(earlier), keep)
	}
	if v := metrics[metricFilesRemoved]; v < float64(len(earlier))+2 || v > float64(s.FilesRemoved) {
		t.Errorf("%s = %v, want between %d and %d", metricFilesRemoved, v, len(earlier)+2, s.FilesRemoved)
	}
	var removals int
	for _, msg := range logs.snapshot() {
		if msg == "pprofotel: oldest profile files removed to keep within the retention bounds" {
			removals++
		}
	}
	if removals == 0 {
		t.Errorf("no removal logged: %q", logs.snapshot())
	}
}
