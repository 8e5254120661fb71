//go:build unix

package pprofconv_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pprofotel/profiler/pprofconv"
	"google.golang.org/protobuf/proto"
)

// TestReadPathRefusesNonRegular checks that a named pipe or a link to a
// device among the files of a directory is refused by name, without
// blocking on the pipe or reading the device, while the regular files and
// links to them are read.
func TestReadPathRefusesNonRegular(t *testing.T) {
	data, err := proto.Marshal(fixtureWindow("checkout", "a", 0).Request)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		wantErr string // empty: read as a window
	}{
		{"fifo.pb", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip("no named pipes here:", err)
			}
		}, "fifo.pb: not a regular file (a named pipe)"},
		{"zero.pb", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "zero.pb: not a regular file (a character device)"},
		{"link.pb", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "window.pb")
			if err := os.WriteFile(target, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.make(t, filepath.Join(dir, tt.name))
			if err := os.WriteFile(filepath.Join(dir, "a.pb"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			type result struct {
				reqs []pprofconv.Request
				err  error
			}
			done := make(chan result, 1)
			go func() {
				reqs, err := pprofconv.ReadPath(dir)
				done <- result{reqs, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				// Not a timing assertion: a ReadPath that opens the
				// pipe never returns, and the test must say so.
				t.Fatal("ReadPath still blocked after a minute")
			}
			if tt.wantErr == "" {
				if r.err != nil || len(r.reqs) != 2 {
					t.Fatalf("ReadPath = %d requests, %v; want 2", len(r.reqs), r.err)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr) {
				t.Fatalf("ReadPath error %v, want one containing %q", r.err, tt.wantErr)
			}
		})
	}
}

// TestReadFileDevice checks that a device named explicitly is read up to
// MaxInputSize and then refused, naming it and the limit.
func TestReadFileDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	_, err := pprofconv.ReadPath("/dev/zero")
	if want := "/dev/zero: longer than 128 MiB, the most pprofotel reads from one input"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ReadPath(/dev/zero) error %v, want one containing %q", err, want)
	}
}
