package otlpprofilefile

import (
	"os"
	"regexp"
	"sync"
	"testing"
)

// TestDocListsEveryVariable checks that doc.go names exactly the variables
// New reads, as recorded by the getenv it is given.
func TestDocListsEveryVariable(t *testing.T) {
	var mu sync.Mutex
	read := map[string]bool{}
	getenv := func(name string) string {
		mu.Lock()
		read[name] = true
		mu.Unlock()
		return ""
	}
	t.Setenv("TMPDIR", t.TempDir())
	if _, err := newExporter(getenv, nil, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, name := range regexp.MustCompile(`(?:PPROFOTEL|OTEL)_[A-Z_]+[A-Z]`).FindAllString(string(doc), -1) {
		listed[name] = true
	}
	// The exporter's selection by name is the profiler's reading, not New's.
	delete(listed, "OTEL_PROFILES_EXPORTER")
	delete(listed, "PPROFOTEL_EXPORTER")
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
