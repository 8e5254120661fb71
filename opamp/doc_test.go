package opamp

import (
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/envdoc"
)

// TestDocListsEveryVariable checks that doc.go names exactly the variables
// the configuration reads.
func TestDocListsEveryVariable(t *testing.T) {
	envdoc.Check(t, func(getenv func(string) string) {
		if _, err := newConfig(nil, getenv); err != nil {
			t.Fatal(err)
		}
	})
}
