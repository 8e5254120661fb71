// Package envdoc checks that a package's doc.go lists exactly the
// environment variables its constructor reads, as the exporter packages
// promise.
package envdoc

import (
	"os"
	"regexp"
	"sync"
	"testing"
)

// listedVariable matches a variable's name in prose.
var listedVariable = regexp.MustCompile(`\b(?:OTEL|PPROFOTEL|SPLUNK)_[A-Z_]*[A-Z]\b|\bGODEBUG\b`)

// selection names the variables that choose an exporter by name: the
// profiler reads them, not the exporter's constructor, but its doc.go may
// name them to say how the package is chosen.
var selection = []string{"OTEL_PROFILES_EXPORTER", "SPLUNK_PROFILER_ENABLED"}

// Check runs construct with a getenv that records what it reads, once per
// call (construct may build the exporter several ways, each reading other
// variables), and fails t unless the doc.go of the current directory names
// exactly the variables read.
func Check(t *testing.T, construct func(getenv func(string) string)) {
	t.Helper()
	var mu sync.Mutex
	read := map[string]bool{}
	construct(func(name string) string {
		mu.Lock()
		read[name] = true
		mu.Unlock()
		return ""
	})
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, name := range listedVariable.FindAllString(string(doc), -1) {
		listed[name] = true
	}
	for _, name := range selection {
		delete(listed, name)
	}
	for name := range read {
		if !listed[name] {
			t.Errorf("New reads %s, which doc.go does not list", name)
		}
	}
	for name := range listed {
		if !read[name] {
			t.Errorf("doc.go lists %s, which New does not read", name)
		}
	}
	if len(read) == 0 || len(listed) == 0 {
		t.Error("no variable read or listed")
	}
}
