package otlpprofilegrpc

import (
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/envdoc"
)

// TestDocListsEveryVariable checks that doc.go names exactly the variables
// New reads.
func TestDocListsEveryVariable(t *testing.T) {
	envdoc.Check(t, func(getenv func(string) string) {
		// A host:port endpoint makes New read the INSECURE variables too.
		for _, opts := range [][]Option{nil, {WithEndpoint("127.0.0.1:4317")}} {
			e, err := newExporter(getenv, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			_ = e.Shutdown(t.Context())
		}
	})
}
