package offcpu

import (
	"testing"

	"golang.org/x/exp/trace"
)

func TestSplitSpan(t *testing.T) {
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		spanID  = "b7ad6b7169203331"
		rootID  = "00f067aa0ba902b7"
	)
	tests := []struct {
		msg                      string
		trace, span, root, route string
		ok                       bool
	}{
		{msg: traceID + spanID + rootID, trace: traceID, span: spanID, root: rootID, ok: true},
		{msg: traceID + spanID + rootID + "/users/{id}", trace: traceID, span: spanID, root: rootID, route: "/users/{id}", ok: true},
		{msg: traceID + spanID + rootID + "a;b", trace: traceID, span: spanID, root: rootID, route: "a;b", ok: true},
		{msg: traceID + spanID + spanID, trace: traceID, span: spanID, root: spanID, ok: true},
		{msg: traceID + spanID + "0000000000000000", trace: traceID, span: spanID, ok: true},
		{msg: traceID + spanID},       // the spelling before the root was added
		{msg: traceID + spanID + "0"}, // cut
		{msg: ""},
	}
	for _, tt := range tests {
		tr, sp, root, route, ok := splitSpan(tt.msg)
		if tr != tt.trace || sp != tt.span || root != tt.root || route != tt.route || ok != tt.ok {
			t.Errorf("splitSpan(%q) = %q, %q, %q, %q, %v; want %q, %q, %q, %q, %v", tt.msg, tr, sp, root, route, ok, tt.trace, tt.span, tt.root, tt.route, tt.ok)
		}
	}
}

func TestSkipStack(t *testing.T) {
	tests := []struct {
		name   string
		frames []string // leaf first
		want   bool
	}{
		{"the sweeper yielding", []string{"runtime.Gosched", "runtime.goschedIfBusy", "runtime.bgsweep"}, true},
		{"a mark worker", []string{"runtime.gcMarkDone", "runtime.gcBgMarkWorker"}, true},
		{"the tracer's advancer", []string{"runtime.chanrecv1", "runtime.(*wakeableSleep).sleep", "runtime.(*traceAdvancerState).start.func1"}, true},
		{"the finalizer goroutine idle", []string{"runtime.runFinalizers"}, true},
		{"the trace's reader", []string{"sync.(*Mutex).Lock", "github.com/pprofotel/profiler/internal/collect/offcpu.(*traceSink).Write", "runtime/trace.(*traceMultiplexer).startLocked.func1"}, true},
		{"the recorder", []string{"runtime.selectgo", recorderFunc + "loop"}, true},
		{"a finalizer of the application", []string{"time.Sleep", "main.closeFile", "runtime.runFinalizers"}, false},
		{"the main goroutine in the runtime", []string{"runtime.gcWaitOnMark", "runtime.main"}, false},
		{"the application in the runtime", []string{"runtime.chanrecv1", "main.worker"}, false},
		{"the application's flight recorder", []string{"runtime.traceAdvance", "runtime/trace.(*FlightRecorder).Stop", "main.main", "runtime.main"}, false},
		{"no stack", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frames := func(yield func(trace.StackFrame) bool) {
				for _, f := range tt.frames {
					if !yield(trace.StackFrame{Func: f}) {
						return
					}
				}
			}
			if got := skipStack(frames); got != tt.want {
				t.Errorf("skipStack(%q) = %v, want %v", tt.frames, got, tt.want)
			}
		})
	}
}
