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

	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestFileRetention runs the file exporter with a bound of three files in
// a directory that holds files of an earlier run and a file of the
// application's: the earlier run's files go first, then the oldest of this
// run's, each removal is counted in Stats and its metric (the exporter
// reports them through the Export context), and the application's file
// stays. The exporter package tests its own logging of removals.
func TestFileRetention(t *testing.T) {
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
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	const keep = 3
	p, err := Start(shortWindows(), WithExporter(fileExporter(t, dir, otlpprofilefile.WithMaxFiles(keep))),
		WithProfileTypes(GoroutineProfile), WithProcessContext(false), WithWindow(20*time.Millisecond),
		WithMeterProvider(mp), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "files removed", func() bool { return p.Stats().FilesRemoved >= int64(len(earlier))+2 })
	metrics, _ := readMetrics(t, reader)
	if err := p.Stop(stopContext(t)); err != nil {
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
	if v := metrics["pprofotel.files.removed"]; v < float64(len(earlier))+2 || v > float64(s.FilesRemoved) {
		t.Errorf("%s = %v, want between %d and %d", "pprofotel.files.removed", v, len(earlier)+2, s.FilesRemoved)
	}
}
