package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
