package otlpprofilefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/export/registry"
	"github.com/pprofotel/profiler/internal/export/report"
	"github.com/pprofotel/profiler/pprofconv"
)

var fileNameRE = regexp.MustCompile(`^profiles-\d{8}T\d{6}\.\d{9}Z-\d+\.(pb|json)$`)

// noEnv is a getenv of an empty environment.
func noEnv(string) string { return "" }

// newTest returns an exporter over an empty environment, failing the test
// on an error.
func newTest(t *testing.T, opts ...Option) *Exporter {
	t.Helper()
	e, err := newExporter(noEnv, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExport(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantExt string
	}{
		{"protobuf", nil, ".pb"},
		{"json", []Option{WithJSON()}, ".json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nested", "out")
			e := newTest(t, append(tt.opts, WithDir(dir))...)
			sent := []*collectorpb.ExportProfilesServiceRequest{otlptest.Request(1), otlptest.Request(2), otlptest.Request(3)}
			for _, req := range sent {
				if err := e.Export(context.Background(), req); err != nil {
					t.Fatalf("Export: %v", err)
				}
			}
			if err := e.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if err := e.Export(context.Background(), otlptest.Request(4)); !errors.Is(err, ErrShutdown) {
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

func TestJSONIsIndentedOTLP(t *testing.T) {
	dir := t.TempDir()
	e := newTest(t, WithDir(dir), WithJSON())
	if err := e.Export(context.Background(), otlptest.Request(1)); err != nil {
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

func TestNamesAreUniqueAcrossExporters(t *testing.T) {
	dir := t.TempDir()
	a := newTest(t, WithDir(dir))
	b := newTest(t, WithDir(dir))
	const n = 20
	for i := range n {
		if err := a.Export(context.Background(), otlptest.Request(i)); err != nil {
			t.Fatal(err)
		}
		if err := b.Export(context.Background(), otlptest.Request(i)); err != nil {
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
		if !proto.Equal(got, otlptest.Request(i/2)) {
			t.Fatalf("file %d (%s) is not request %d", i, de.Name(), i/2)
		}
	}
}

func TestExportErrors(t *testing.T) {
	e := newTest(t, WithDir(t.TempDir()))
	if err := e.Export(context.Background(), nil); err == nil {
		t.Errorf("Export(nil) succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Export(ctx, otlptest.Request(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Export with cancelled context = %v, want context.Canceled", err)
	}
}

// TestOptionErrors checks that a bad option makes New fail with an error
// naming the option and its value.
func TestOptionErrors(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithDir(""), `WithDir(""): directory must not be empty`},
		{WithDir(plain), `WithDir("` + plain + `")`},
		{WithDir("/proc/nope"), `WithDir("/proc/nope")`},
		{WithMaxFiles(-1), "WithMaxFiles(-1): bound must not be negative"},
		{WithMaxBytes(-2), "WithMaxBytes(-2): bound must not be negative"},
	} {
		_, err := newExporter(noEnv, nil, []Option{tt.opt})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New = %v, want an error containing %q", err, tt.want)
		}
	}
}

// TestEnvironment checks each variable, valid and invalid: an invalid
// value is warned about once and the default applies.
func TestEnvironment(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defaultDir := filepath.Join(tmp, defaultDirName)
	custom := filepath.Join(tmp, "custom", "dir")
	for _, tt := range []struct {
		name     string
		env      map[string]string
		opts     []Option
		want     config
		warnings []string
	}{
		{name: "defaults",
			want: config{dir: defaultDir, maxFiles: DefaultMaxFiles, maxBytes: DefaultMaxBytes}},
		{name: "every variable",
			env:  map[string]string{envDir: custom, envFormat: "JSON", envMaxFiles: "5", envMaxBytes: "0"},
			want: config{dir: custom, json: true, maxFiles: 5, maxBytes: 0}},
		{name: "options win",
			env:  map[string]string{envDir: "/proc/nope", envFormat: "bogus", envMaxFiles: "x", envMaxBytes: "-1"},
			opts: []Option{WithDir(custom), WithJSON(), WithMaxFiles(7), WithMaxBytes(9)},
			want: config{dir: custom, json: true, maxFiles: 7, maxBytes: 9}},
		{name: "a directory that cannot be created",
			env:      map[string]string{envDir: "/proc/nope"},
			want:     config{dir: defaultDir, maxFiles: DefaultMaxFiles, maxBytes: DefaultMaxBytes},
			warnings: []string{`otlpprofilefile: PPROFOTEL_FILE_DIR="/proc/nope": mkdir /proc/nope: `}},
		{name: "invalid values",
			env:  map[string]string{envFormat: "xml", envMaxFiles: "-3", envMaxBytes: "1GB"},
			want: config{dir: defaultDir, maxFiles: DefaultMaxFiles, maxBytes: DefaultMaxBytes},
			warnings: []string{
				`otlpprofilefile: PPROFOTEL_FILE_FORMAT="xml": format must be "proto" or "json"; ignored`,
				`otlpprofilefile: PPROFOTEL_FILE_MAX_FILES="-3": must be a whole number of files, 0 for no bound; ignored`,
				`otlpprofilefile: PPROFOTEL_FILE_MAX_BYTES="1GB": must be a whole number of bytes, 0 for no bound; ignored`,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			e, err := newExporter(func(k string) string { return tt.env[k] }, logger, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if e.cfg != tt.want {
				t.Errorf("config %+v, want %+v", e.cfg, tt.want)
			}
			if info, err := os.Stat(e.Dir()); err != nil || !info.IsDir() {
				t.Errorf("directory %s: %v", e.Dir(), err)
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if logs.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tt.warnings) {
				t.Fatalf("logged %q, want %d warnings", lines, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], strings.ReplaceAll(w, `"`, `\"`)) {
					t.Errorf("warning %d: %s\nwant one containing %s", i, lines[i], w)
				}
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	f, ok := registry.Lookup("file")
	if !ok {
		t.Fatal(`"file" is not registered`)
	}
	t.Setenv("PPROFOTEL_FILE_DIR", t.TempDir())
	e, err := f(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*Exporter); !ok {
		t.Fatalf("the factory built a %T", e)
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

// removals collects what the exporter logged about removed files.
type removals struct {
	buf bytes.Buffer
}

func (r *removals) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&r.buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// parse reads the log: the bytes freed, the number of removal records,
// and the failures.
func (r *removals) parse(t *testing.T) (freed int64, calls int, levels []string) {
	t.Helper()
	dec := json.NewDecoder(&r.buf)
	for dec.More() {
		var rec struct {
			Level string
			Msg   string
			Bytes int64
			Error string
		}
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Error != "" {
			t.Errorf("logged %s: %s", rec.Msg, rec.Error)
			continue
		}
		freed += rec.Bytes
		calls++
		levels = append(levels, rec.Level)
	}
	return freed, calls, levels
}

// TestRetention writes windows into a directory that may already hold
// files, the exporter's from an earlier run and others', and checks which
// remain: the exporter removes its own files, oldest first, until both
// bounds hold, and never anything else; it reports the removals to the
// profiler and logs them.
func TestRetention(t *testing.T) {
	// written is the size of each file the test writes.
	written := int64(proto.Size(otlptest.Request(1)))
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
		wantRemoved  int64
		wantFreed    int64
		wantReported int // exports that removed files
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
			opts := []Option{WithDir(dir), WithMaxFiles(tt.maxFiles), WithMaxBytes(tt.maxBytes)}
			if tt.json {
				opts = append(opts, WithJSON())
			}
			var log removals
			e, err := newExporter(noEnv, log.logger(), opts)
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			ctx := report.NewContext(context.Background(), &rep)
			var ours []string
			for range tt.writes {
				if err := e.Export(ctx, otlptest.Request(1)); err != nil {
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
			freed, calls, levels := log.parse(t)
			if rep.FilesRemoved() != tt.wantRemoved || calls != tt.wantReported {
				t.Errorf("reported %d files removed, logged %d times; want %d and %d", rep.FilesRemoved(), calls, tt.wantRemoved, tt.wantReported)
			}
			// The first removal is news; the later ones are routine.
			for i, l := range levels {
				if want := map[bool]string{true: "INFO", false: "DEBUG"}[i == 0]; l != want {
					t.Errorf("removal %d logged at %s, want %s", i, l, want)
				}
			}
			if !tt.json && freed != tt.wantFreed {
				t.Errorf("logged %d bytes freed, want %d", freed, tt.wantFreed)
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
