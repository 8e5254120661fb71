package offcpu

import "testing"

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
