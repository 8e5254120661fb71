//go:build unix

package pprofconv_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	pprof "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/pprofconv"
)

// TestWriteFileThroughLink checks that WriteFile onto a symbolic link
// writes the file the link points to and keeps the link, keeps an existing
// file's permissions, and refuses to replace what is not a regular file.
func TestWriteFileThroughLink(t *testing.T) {
	profiles, _, err := pprofconv.Convert([]pprofconv.Request{cpuOnly(t, 0)}, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := profiles["cpu"]
	readSamples := func(t *testing.T, path string) int {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := pprof.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Sample)
	}

	t.Run("link to a file", func(t *testing.T) {
		dir, kept := t.TempDir(), t.TempDir()
		target := filepath.Join(kept, "service.pgo")
		if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "default.pgo")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := pprofconv.WriteFile(link, cpu); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symbolic link: %v, %v", link, info.Mode(), err)
		}
		if n := readSamples(t, target); n != len(cpu.Sample) {
			t.Errorf("target holds %d samples, want %d", n, len(cpu.Sample))
		}
		if info, _ := os.Stat(target); info.Mode().Perm() != 0o600 {
			t.Errorf("target permissions %v, want the file's own 0600", info.Mode().Perm())
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d entries in the link's directory, want the link alone", len(entries))
		}
	})
	t.Run("new file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cpu.pb.gz")
		if err := pprofconv.WriteFile(path, cpu); err != nil {
			t.Fatal(err)
		}
		if info, _ := os.Stat(path); info.Mode().Perm() != 0o644 {
			t.Errorf("permissions %v, want 0644", info.Mode().Perm())
		}
	})
	refusals := []struct {
		name    string
		make    func(t *testing.T, path string)
		wantErr string
	}{
		{"dangling link", func(t *testing.T, path string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "missing"), path); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link whose target cannot be written"},
		{"link to a pipe", func(t *testing.T, path string) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip(err)
			}
			if err := os.Symlink(fifo, path); err != nil {
				t.Fatal(err)
			}
		}, "is a named pipe, not a regular file: refusing to replace it"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is a directory, not a regular file: refusing to replace it"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "default.pgo")
			tt.make(t, path)
			err := pprofconv.WriteFile(path, cpu)
			if err == nil || !strings.HasPrefix(err.Error(), "write "+path+": ") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("WriteFile error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
