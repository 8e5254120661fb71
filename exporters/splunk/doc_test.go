package splunk

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
	// A host:port endpoint makes New read the INSECURE variables too.
	for _, opts := range [][]Option{nil, {WithEndpoint("127.0.0.1:4317")}} {
		e, err := newExporter(getenv, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Shutdown(t.Context())
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, name := range regexp.MustCompile(`(?:OTEL|SPLUNK|PPROFOTEL)_[A-Z_]+[A-Z]|GODEBUG`).FindAllString(string(doc), -1) {
		listed[name] = true
	}
	// The choice of this exporter by name is the profiler's reading, not
	// New's.
	for _, name := range []string{"OTEL_PROFILES_EXPORTER", "PPROFOTEL_EXPORTER", "SPLUNK_PROFILER_ENABLED"} {
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
