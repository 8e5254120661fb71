package report

import (
	"context"
	"sync"
	"testing"
)

func TestReport(t *testing.T) {
	var r Report
	ctx := NewContext(context.Background(), &r)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			rep := FromContext(ctx)
			rep.Retried()
			rep.Sent(100)
			rep.Removed(2)
		})
	}
	wg.Wait()
	if r.Retries() != 8 || r.BytesSent() != 800 || r.FilesRemoved() != 16 {
		t.Errorf("Retries %d, BytesSent %d, FilesRemoved %d; want 8, 800 and 16", r.Retries(), r.BytesSent(), r.FilesRemoved())
	}

	// Without a Report in the context, reporting is a no-op.
	none := FromContext(context.Background())
	none.Retried()
	none.Sent(1)
	none.Removed(1)
	if none != nil || none.Retries() != 0 || none.BytesSent() != 0 || none.FilesRemoved() != 0 {
		t.Errorf("a context without a Report gave %v", none)
	}
}
