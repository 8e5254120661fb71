package profiler

import (
	"context"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/deliver"
)

// TestEmptyWindowSendsNothing checks that a window without a profile (one
// between two reads of the goroutine-leak profile, when it is the only type
// asked for) is not queued: its request would hold the resource alone.
func TestEmptyWindowSendsNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		exp  Exporter
	}{
		{"discarding", noneExporter{}},
		{"to files", fileExporter(t, t.TempDir())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig([]Option{WithExporter(tt.exp)}, envOf(nil))
			if err != nil {
				t.Fatal(err)
			}
			var stats deliver.Outcomes
			pipe := newPipeline(c, &stats)
			now := time.Now()
			queued, _, err := pipe.send(collect.Window{Start: now.Add(-time.Minute), End: now})
			if queued || err != nil {
				t.Errorf("send of an empty window = %v, %v; want false, nil", queued, err)
			}
			if err := pipe.shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if got := stats.Exported.Load() + stats.Failed.Load(); got != 0 {
				t.Errorf("%d windows delivered or failed, want none", got)
			}
		})
	}
}
