package otlp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlp"
)

func TestGoBuildID(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on PATH; the test compares with go tool buildid")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "tool", "buildid", exe).Output()
	if err != nil {
		t.Fatalf("go tool buildid %s: %v", exe, err)
	}
	want := strings.TrimSpace(string(out))

	dir := t.TempDir()
	notELF := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte{0x7f}, 0o644); err != nil {
		t.Fatal(err)
	}
	brokenELF := filepath.Join(dir, "broken")
	if err := os.WriteFile(brokenELF, []byte("\x7fELF\x02\x01\x01garbage"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		path    string
		want    string
		wantErr bool
	}{
		{"test binary", exe, want, false},
		{"not ELF", notELF, "", false},
		{"too short", short, "", false},
		{"broken ELF", brokenELF, "", true},
		{"missing file", filepath.Join(dir, "missing"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := otlp.GoBuildID(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("GoBuildID(%s) error = %v, want error %v", tt.path, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("GoBuildID(%s) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
	if want == "" {
		t.Errorf("go tool buildid printed nothing for %s", exe)
	}
}
