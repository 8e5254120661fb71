package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/pprofconv"
)

var fileNameRE = regexp.MustCompile(`^profiles-\d{8}T\d{6}\.\d{9}Z-\d+\.(pb|json)$`)

func TestFileExport(t *testing.T) {
	tests := []struct {
		name    string
		json    bool
		wantExt string
	}{
		{"protobuf", false, ".pb"},
		{"json", true, ".json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nested", "out")
			e, err := NewFile(FileConfig{Dir: dir, JSON: tt.json})
			if err != nil {
				t.Fatalf("NewFile: %v", err)
			}
			sent := []*collectorpb.ExportProfilesServiceRequest{testRequest(1), testRequest(2), testRequest(3)}
			for _, req := range sent {
				if err := e.Export(context.Background(), req); err != nil {
					t.Fatalf("Export: %v", err)
				}
			}
			if err := e.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if err := e.Export(context.Background(), testRequest(4)); !errors.Is(err, ErrShutdown) {
				t.Fatalf("Export after Shutdown = %v, want ErrShutdown", err)
			}

			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, de := range entries {
				names = append(names, de.Name())
			}
			if len(names) != len(sent) {
				t.Fatalf("dir holds %q, want %d files and no temporary ones", names, len(sent))
			}
			// ReadDir sorts by name: reading in that order must give the
			// requests in the order they were written.
			if !sort.StringsAreSorted(names) {
				t.Fatalf("ReadDir names not sorted: %q", names)
			}
			for i, name := range names {
				if !fileNameRE.MatchString(name) || filepath.Ext(name) != tt.wantExt {
					t.Errorf("file name %q does not match %s with extension %s", name, fileNameRE, tt.wantExt)
				}
				info, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if perm := info.Mode().Perm(); perm != 0o644 {
					t.Errorf("%s mode = %v, want 0644", name, perm)
				}
				got, err := readRequest(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("reading %s: %v", name, err)
				}
				if !proto.Equal(got, sent[i]) {
					t.Errorf("file %d (%s) differs:\ngot  %v\nwant %v", i, name, got, sent[i])
				}
			}
		})
	}
}

func TestFileJSONIsIndentedOTLP(t *testing.T) {
	dir := t.TempDir()
	e, err := NewFile(FileConfig{Dir: dir, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), testRequest(1)); err != nil {
		t.Fatal(err)
	}
	matches, err := filepath.Glob(filepath.Join(dir, "profiles-*.json"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("glob = %q, %v; want one file", matches, err)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(want) {
		t.Fatalf("file content differs from testdata/request.json:\n%s", data)
	}
}

func TestFileNamesAreUniqueAcrossExporters(t *testing.T) {
	dir := t.TempDir()
	a, err := NewFile(FileConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewFile(FileConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := a.Export(context.Background(), testRequest(i)); err != nil {
			t.Fatal(err)
		}
		if err := b.Export(context.Background(), testRequest(i)); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*n {
		t.Fatalf("dir holds %d files, want %d", len(entries), 2*n)
	}
	// Written alternately by a and b: the sorted names must read back as
	// request 0, 0, 1, 1, ...
	for i, de := range entries {
		got, err := readRequest(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, testRequest(i/2)) {
			t.Fatalf("file %d (%s) is not request %d", i, de.Name(), i/2)
		}
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFile(FileConfig{}); err == nil || !strings.Contains(err.Error(), "dir is empty") {
		t.Errorf("NewFile with no dir = %v, want an error naming the dir", err)
	}
	if _, err := NewFile(FileConfig{Dir: notDir}); err == nil || !strings.Contains(err.Error(), `file exporter dir "`+notDir+`"`) {
		t.Errorf("NewFile on a regular file = %v, want an error naming the dir", err)
	}

	e, err := NewFile(FileConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), nil); err == nil {
		t.Errorf("Export(nil) succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Export(ctx, testRequest(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Export with cancelled context = %v, want context.Canceled", err)
	}

}

// readRequest reads back the one request of a file the exporter wrote,
// through the reader users have.
func readRequest(path string) (*collectorpb.ExportProfilesServiceRequest, error) {
	reqs, err := pprofconv.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(reqs) != 1 {
		return nil, fmt.Errorf("%s holds %d requests, want 1", path, len(reqs))
	}
	return reqs[0].Request, nil
}

// TestFileRetention writes windows into a directory that may already hold
// files, the exporter's from an earlier run and others', and checks which
// remain: the exporter removes its own files, oldest first, until both
// bounds hold, and never anything else.
func TestFileRetention(t *testing.T) {
	// written is the size of each file the test writes.
	written := int64(proto.Size(testRequest(1)))
	// Names of an earlier run (another pid), older than any file written.
	old := func(i int) string { return fmt.Sprintf("profiles-20200101T0000%02d.000000000Z-4242.pb", i) }
	type entry struct {
		name string
		size int64
		kind string // "" a regular file, "dir", "symlink"
	}
	// foreign holds what the exporter must leave alone, however far over
	// its bounds the directory is.
	foreign := []entry{
		{name: "notes.txt", size: 5000},
		{name: "profiles-latest.pb", size: 10},                              // not a time
		{name: "profiles-20200101T000000.000000000Z-12.pb.bak", size: 10},   // not its extension
		{name: "profiles-20200101T000000.000000000Z-abc.pb", size: 10},      // not a pid
		{name: "profiles-20200101T000000.000000000Z.pb", size: 10},          // no pid
		{name: "profiles-2020-01-01T00:00:00Z-1.pb", size: 10},              // another time layout
		{name: "Profiles-20200101T000000.000000000Z-1.pb", size: 10},        // not its prefix
		{name: ".profiles-123.tmp", size: 10},                               // a write in progress
		{name: "profiles-20200101T000000.000000000Z-1.json", kind: "dir"},   // not a regular file
		{name: "profiles-20200101T000001.000000000Z-1.pb", kind: "symlink"}, // not a regular file
	}
	for _, tt := range []struct {
		name     string
		json     bool
		maxFiles int
		maxBytes int64
		existing []entry
		writes   int
		// wantKept are the existing files kept; wantNew is the number of
		// written files kept, the newest.
		wantKept     []string
		wantNew      int
		wantRemoved  int
		wantFreed    int64
		wantReported int // calls of OnRemove
	}{
		{name: "count limit", maxFiles: 3, writes: 5,
			wantNew: 3, wantRemoved: 2, wantFreed: 2 * written, wantReported: 2},
		{name: "count limit json", json: true, maxFiles: 2, writes: 4,
			wantNew: 2, wantRemoved: 2, wantReported: 2},
		{name: "byte limit", maxBytes: 2*written + written/2, writes: 4,
			wantNew: 2, wantRemoved: 2, wantFreed: 2 * written, wantReported: 2},
		{name: "both limits, the tighter binds", maxFiles: 3, maxBytes: written, writes: 3,
			wantNew: 1, wantRemoved: 2, wantFreed: 2 * written, wantReported: 2},
		{name: "files from a previous run counted", maxFiles: 3, writes: 1,
			existing: []entry{{name: old(1), size: 100}, {name: old(2), size: 200}, {name: old(3), size: 300}, {name: old(4), size: 400}},
			wantKept: []string{old(3), old(4)}, wantNew: 1, wantRemoved: 2, wantFreed: 300, wantReported: 1},
		{name: "previous run over the byte limit", maxBytes: 1000 + written, writes: 1,
			existing: []entry{{name: old(1), size: 1000}, {name: old(2), size: 1000}, {name: old(3), size: 1000}},
			wantKept: []string{old(3)}, wantNew: 1, wantRemoved: 2, wantFreed: 2000, wantReported: 1},
		{name: "foreign files left alone", maxFiles: 1, maxBytes: 1, writes: 3,
			existing: append([]entry{{name: old(1), size: 10}}, foreign...),
			wantNew:  1, wantRemoved: 3, wantFreed: 10 + 2*written, wantReported: 3},
		{name: "the newest stays above the byte limit", maxBytes: 1, writes: 2,
			wantNew: 1, wantRemoved: 1, wantFreed: written, wantReported: 1},
		{name: "no limit", writes: 3,
			existing: []entry{{name: old(1), size: 10}, {name: old(2), size: 10}},
			wantKept: []string{old(1), old(2)}, wantNew: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			outside := filepath.Join(t.TempDir(), "target.pb")
			if err := os.WriteFile(outside, []byte("not ours"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.existing {
				path := filepath.Join(dir, f.name)
				var err error
				switch f.kind {
				case "dir":
					err = os.Mkdir(path, 0o755)
				case "symlink":
					err = os.Symlink(outside, path)
				default:
					err = os.WriteFile(path, make([]byte, f.size), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var removed, reported int
			var freed int64
			e, err := NewFile(FileConfig{Dir: dir, JSON: tt.json, MaxFiles: tt.maxFiles, MaxBytes: tt.maxBytes,
				OnRemove: func(files int, bytes int64, err error) {
					if err != nil {
						t.Errorf("OnRemove: %v", err)
					}
					removed += files
					freed += bytes
					reported++
				}})
			if err != nil {
				t.Fatal(err)
			}
			var ours []string
			for range tt.writes {
				if err := e.Export(context.Background(), testRequest(1)); err != nil {
					t.Fatal(err)
				}
				ours = append(ours, newestOwn(t, dir))
			}

			var want []string
			for _, f := range tt.existing {
				if !isExportedFileName(f.name) || f.kind != "" {
					want = append(want, f.name) // never touched
				}
			}
			want = append(want, tt.wantKept...)
			want = append(want, ours[len(ours)-tt.wantNew:]...)
			sort.Strings(want)
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, de := range entries {
				got = append(got, de.Name())
			}
			if !slices.Equal(got, want) {
				t.Errorf("the directory holds\n%q\nwant\n%q", got, want)
			}
			if removed != tt.wantRemoved || reported != tt.wantReported {
				t.Errorf("OnRemove reported %d files in %d calls, want %d in %d", removed, reported, tt.wantRemoved, tt.wantReported)
			}
			if !tt.json && freed != tt.wantFreed {
				t.Errorf("OnRemove reported %d bytes, want %d", freed, tt.wantFreed)
			}
			if data, err := os.ReadFile(outside); err != nil || string(data) != "not ours" {
				t.Errorf("the symlink's target: %q, %v", data, err)
			}
		})
	}
}

// newestOwn returns the name of the newest file in dir the exporter wrote.
func newestOwn(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if n := entries[i].Name(); fileNameRE.MatchString(n) && entries[i].Type().IsRegular() && !strings.Contains(n, "-4242.") {
			return n
		}
	}
	t.Fatal("no file written")
	return ""
}

func TestFileRetentionRejectsNegativeBounds(t *testing.T) {
	for _, cfg := range []FileConfig{{MaxFiles: -1}, {MaxBytes: -1}} {
		cfg.Dir = t.TempDir()
		if _, err := NewFile(cfg); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("NewFile(%d files, %d bytes) = %v, want an error", cfg.MaxFiles, cfg.MaxBytes, err)
		}
	}
}
