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
		})
	}
	wg.Wait()
	if r.Retries() != 8 || r.BytesSent() != 800 {
		t.Errorf("Retries %d, BytesSent %d; want 8 and 800", r.Retries(), r.BytesSent())
	}

	// Without a Report in the context, reporting is a no-op.
	none := FromContext(context.Background())
	none.Retried()
	none.Sent(1)
	if none != nil || none.Retries() != 0 || none.BytesSent() != 0 {
		t.Errorf("a context without a Report gave %v", none)
	}
}
