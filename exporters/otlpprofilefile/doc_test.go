package otlpprofilefile

import (
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/envdoc"
)

// TestDocListsEveryVariable checks that doc.go names exactly the variables
// New reads.
func TestDocListsEveryVariable(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	envdoc.Check(t, func(getenv func(string) string) {
		if _, err := newExporter(getenv, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
}
