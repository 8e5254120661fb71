package offcpu

import (
	"bytes"
	"os"
	"runtime/trace"
	"testing"
	"time"
)

func TestScratchRecord(t *testing.T) {
	stop := pingPong(1)
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 5 * time.Second, MaxBytes: 1 << 30})
	fr.Start()
	time.Sleep(500 * time.Millisecond)
	var buf bytes.Buffer
	fr.WriteTo(&buf)
	fr.Stop()
	stop()
	os.WriteFile("/tmp/pp.trace", buf.Bytes(), 0o644)
	t.Logf("%d bytes", buf.Len())
}

func BenchmarkScratchParse(b *testing.B) {
	data, _ := os.ReadFile("/tmp/pp.trace")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		w := newWindow(1 << 30)
		w.read(bytes.NewReader(data), time.Now())
		b.ReportMetric(float64(len(w.events)), "waits")
	}
}
