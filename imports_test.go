package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/pprofotel/profiler"

// listedPackage is what go list says of a package of this module.
type listedPackage struct {
	ImportPath string
	Imports    []string
	GoFiles    []string
	Dir        string
}

// listModule returns the module's packages, without their tests.
func listModule(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-json", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// stage returns the pipeline stage of an internal package
// ("collect", "convert", "deliver", "export"), or "".
func stage(path string) string {
	rest, ok := strings.CutPrefix(path, modulePath+"/internal/")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "/")
	if slices.Contains([]string{"collect", "convert", "deliver", "export"}, s) {
		return s
	}
	return ""
}

// TestImportRules checks the shape docs/architecture.md draws: no internal
// package imports a public package of the module (test helpers under
// internal/testutil drive the public API and are exempt), the collect
// stage imports no later stage, and convert imports neither deliver nor
// export.
func TestImportRules(t *testing.T) {
	later := map[string][]string{
		"collect": {"convert", "deliver", "export"},
		"convert": {"deliver", "export"},
	}
	for _, p := range listModule(t) {
		internal := strings.HasPrefix(p.ImportPath, modulePath+"/internal/")
		if !internal || strings.HasPrefix(p.ImportPath, modulePath+"/internal/testutil") {
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, modulePath) {
				continue
			}
			if !strings.HasPrefix(imp, modulePath+"/internal/") {
				t.Errorf("%s imports the public %s", p.ImportPath, imp)
			}
			if slices.Contains(later[stage(p.ImportPath)], stage(imp)) {
				t.Errorf("%s (stage %s) imports %s, of the later stage %s", p.ImportPath, stage(p.ImportPath), imp, stage(imp))
			}
		}
	}
}

// TestSeams checks that the packages of the module reach each other
// through seams the compiler checks: no go:linkname but the runtime's
// label accessors in package labels, and no unsafe in the root package.
func TestSeams(t *testing.T) {
	allowed := map[string]bool{
		"runtime/pprof.runtime_getProfLabel": true,
		"runtime/pprof.runtime_setProfLabel": true,
	}
	for _, p := range listModule(t) {
		if p.ImportPath == modulePath && slices.Contains(p.Imports, "unsafe") {
			t.Errorf("the root package imports unsafe")
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				directive, ok := strings.CutPrefix(line, "//go:linkname ")
				if !ok {
					continue
				}
				fields := strings.Fields(directive)
				if len(fields) != 2 || !allowed[fields[1]] {
					t.Errorf("%s: //go:linkname %s", filepath.Join(p.ImportPath, f), directive)
				}
			}
		}
	}
}
