package labels

import (
	"bytes"
	"context"
	"io"
	"maps"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	xtrace "golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/internal/collect/requests"
)

// TestRequestsTracked checks what the installed request tracker hears of
// local root spans: their route as the span's name or route changes,
// their end, and nothing of the spans below them.
func TestRequestsTracked(t *testing.T) {
	route := func(r string) attribute.KeyValue { return attribute.String("http.route", r) }
	tests := []struct {
		name string
		opts []Option
		// run starts and ends spans with tr.
		run  func(tr trace.Tracer)
		want map[string]int64
	}{
		{
			name: "name given to Start",
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "GET /a")
				s.End()
			},
			want: map[string]int64{"GET /a": 1},
		},
		{
			name: "route given to Start",
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "GET", trace.WithAttributes(attribute.Int("n", 1), route("/users/{id}")))
				s.End()
			},
			want: map[string]int64{"/users/{id}": 1},
		},
		{
			name: "route among several start options",
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "GET",
					trace.WithSpanKind(trace.SpanKindServer),
					trace.WithAttributes(attribute.String("http.request.method", "GET")),
					trace.WithAttributes(attribute.Int("http.route", 3), route("/a/{id}")),
					trace.WithTimestamp(time.Now()))
				s.End()
				_, s = tr.Start(context.Background(), "GET", trace.WithAttributes(attribute.Int("http.route", 3)))
				s.End()
			},
			want: map[string]int64{"/a/{id}": 1, "GET": 1},
		},
		{
			name: "renamed, then routed by middleware",
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "GET")
				s.SetName("GET /users")
				s.End()
				_, s = tr.Start(context.Background(), "GET")
				s.SetAttributes(attribute.Int("http.route", 3)) // not a string: ignored
				s.SetAttributes(attribute.String("other", "x"), route("/users/{id}"))
				s.SetName("GET /users/7")
				s.End()
			},
			want: map[string]int64{"GET /users": 1, "/users/{id}": 1},
		},
		{
			name: "children and their route do not count",
			run: func(tr trace.Tracer) {
				ctx, root := tr.Start(context.Background(), "GET /a")
				_, child := tr.Start(ctx, "db", trace.WithAttributes(route("/child")))
				child.SetName("renamed child")
				child.End()
				root.End()
			},
			want: map[string]int64{"GET /a": 1},
		},
		{
			name: "remote parent and new root are requests",
			opts: []Option{WithLocalRootSpansOnly()},
			run: func(tr trace.Tracer) {
				ctx, s := tr.Start(remoteParent(context.Background()), "server")
				_, n := tr.Start(ctx, "job", trace.WithNewRoot())
				n.End()
				n.End()
				s.End()
			},
			want: map[string]int64{"server": 1, "job": 1},
		},
		{
			name: "ended by a panic",
			run: func(tr trace.Tracer) {
				defer func() { _ = recover() }()
				_, s := tr.Start(context.Background(), "GET /panics")
				defer s.End()
				panic("boom")
			},
			want: map[string]int64{"GET /panics": 1},
		},
		{
			name: "renamed after End",
			run: func(tr trace.Tracer) {
				_, s := tr.Start(context.Background(), "GET /a")
				s.End()
				s.SetName("late")
			},
			want: map[string]int64{"GET /a": 1},
		},
	}
	// The start options' attributes are read in place (attributesOption),
	// or, with a package trace whose options are not what that expects,
	// by applying the options.
	if attributesOption == nil {
		t.Fatal("trace.WithAttributes' options are not read in place")
	}
	found := attributesOption
	defer func() { attributesOption = found }()
	for _, read := range []string{"in place", "applied"} {
		if read == "applied" {
			attributesOption = nil
		}
		for _, tt := range tests {
			t.Run(read+"/"+tt.name, func(t *testing.T) {
				testRequestsTracked(t, tt.opts, tt.run, tt.want)
			})
		}
	}
}

func testRequestsTracked(t *testing.T, opts []Option, run func(trace.Tracer), want map[string]int64) {
	t.Helper()
	tracker := requests.New(requests.Config{})
	if err := tracker.Install(); err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	run(WrapTracerProvider(sdk, opts...).Tracer("test"))
	if got := tracker.Window(time.Now()).Counts; !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}

// TestRequestEndTimestamp checks that a request ends when its span does,
// at the time given to End.
func TestRequestEndTimestamp(t *testing.T) {
	tracker := requests.New(requests.Config{})
	if err := tracker.Install(); err != nil {
		t.Fatal(err)
	}
	defer tracker.Stop()
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	_, s := WrapTracerProvider(sdk).Tracer("test").Start(context.Background(), "op")
	r := s.(*labeledSpan).request
	start := r.Start()
	s.End(trace.WithTimestamp(start.Add(1500 * time.Millisecond)))
	end, ok := r.Ended()
	if !ok || end.Sub(start) != 1500*time.Millisecond {
		t.Errorf("ended %v after %v, want 1.5s", ok, end.Sub(start))
	}
	if r.IDs() != s.SpanContext().TraceID().String()+s.SpanContext().SpanID().String() {
		t.Errorf("ids %s", r.IDs())
	}
}

// TestRootOfChildOfUnwrappedSpan starts a span under a span of the SDK
// itself, which is under a wrapped root: the wrapper finds the root in the
// labels the context carries.
func TestRootOfChildOfUnwrappedSpan(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	ctx, root := tr.Start(context.Background(), "root")
	defer root.End()
	ctx, raw := sdk.Tracer("raw").Start(ctx, "raw")
	defer raw.End()
	if _, wrapped := raw.(*labeledSpan); wrapped {
		t.Fatal("the SDK's own span is wrapped")
	}
	childCtx, child := tr.Start(ctx, "child")
	defer child.End()
	checkLabels(t, "child context", contextLabels(childCtx), spanLabels(child.SpanContext(), rootOf(root)))
}

// TestRouteLabel checks the route label of the spans of a local root
// while a tracker is installed: the root's route as it started, on the
// root and the spans below it, and no route label without a tracker.
func TestRouteLabel(t *testing.T) {
	route := trace.WithAttributes(attribute.String("http.route", "/users/{id}"))
	tests := []struct {
		name    string
		tracked bool
		opts    []trace.SpanStartOption
		// rename is given to SetName after Start, and routed to
		// SetAttributes as http.route; "" for none.
		rename, routed string
		// The route label of root and child, "" for none.
		wantRoot, wantChild string
		// wantLog are the routes of the execution trace's records of
		// the spans (TraceLogCategory), "" for none: the root's start,
		// its relabelling if any, the child's start, its end (back to
		// the root), the root's route as it ends if it was renamed, and
		// the root's end.
		wantLog []string
	}{
		{"untracked", false, nil, "", "", "", "", []string{"", "", "", ""}},
		{"name", true, nil, "", "", "GET", "GET", []string{"GET", "GET", "GET", ""}},
		{"route", true, []trace.SpanStartOption{route}, "", "", "/users/{id}", "/users/{id}", []string{"/users/{id}", "/users/{id}", "/users/{id}", ""}},
		// The records tell the route as it is, the labels as it was.
		{"renamed after start: the label keeps the start", true, nil, "GET /users/{id}", "", "GET", "GET", []string{"GET", "GET /users/{id}", "GET /users/{id}", "GET /users/{id}", ""}},
		// The child, started from the context Start returned, takes
		// the route its root's goroutine was given.
		{"routed after start: the root's goroutine is relabelled", true, nil, "", "/users/{id}", "/users/{id}", "/users/{id}", []string{"GET", "/users/{id}", "/users/{id}", "/users/{id}", ""}},
		{"untracked, routed", false, nil, "", "/users/{id}", "", "", []string{"", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tracked {
				tracker := requests.New(requests.Config{})
				if err := tracker.Install(); err != nil {
					t.Fatal(err)
				}
				defer tracker.Stop()
			}
			sdk, _ := newSDK(t, sdktrace.AlwaysSample())
			tr := WrapTracerProvider(sdk).Tracer("test")
			stopTrace := startTrace(t)
			ctx, root := tr.Start(context.Background(), "GET", tt.opts...)
			if tt.rename != "" {
				root.SetName(tt.rename)
			}
			if tt.routed != "" {
				root.SetAttributes(attribute.String("http.route", tt.routed))
			}
			rootLabels := currentLabels(t)
			_, child := tr.Start(ctx, "child")
			childLabels := currentLabels(t)
			child.End()
			afterChild := currentLabels(t)
			root.End()
			if logged := stopTrace(); !slices.Equal(logged, tt.wantLog) {
				t.Errorf("routes logged %q, want %q", logged, tt.wantLog)
			}
			if after := currentLabels(t); len(after) != 0 {
				t.Errorf("labels after the root ended: %v", after)
			}
			if !maps.Equal(afterChild, rootLabels) {
				t.Errorf("labels after the child ended %v, want the root's %v", afterChild, rootLabels)
			}
			for what, want := range map[string]string{"root": tt.wantRoot, "child": tt.wantChild} {
				got := rootLabels
				if what == "child" {
					got = childLabels
				}
				if e, ok := got[RouteKey]; e != want || ok != (want != "") {
					t.Errorf("%s: route label %q, %v; want %q", what, e, ok, want)
				}
				if got[LocalRootSpanIDKey] != root.SpanContext().SpanID().String() {
					t.Errorf("%s: %s %q", what, LocalRootSpanIDKey, got[LocalRootSpanIDKey])
				}
			}
		})
	}
}

// startTrace starts the execution tracer; the function it returns stops
// it and returns the routes of the records of TraceLogCategory ("" for a
// record without one), in order.
func startTrace(t *testing.T) func() []string {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		rtrace.Stop()
		r, err := xtrace.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var routes []string
		for {
			ev, err := r.ReadEvent()
			if err == io.EOF {
				return routes
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind() != xtrace.EventLog || ev.Log().Category != TraceLogCategory {
				continue
			}
			// now;before[;route]
			_, rest, _ := strings.Cut(ev.Log().Message, ";")
			_, route, _ := strings.Cut(rest, ";")
			routes = append(routes, route)
		}
	}
}

// TestLabelKeysShort checks that every label key the wrapper sets is read
// whole by the OpenTelemetry eBPF profiler, which reads at most 15 bytes.
func TestLabelKeysShort(t *testing.T) {
	for _, k := range []string{TraceIDKey, SpanIDKey, LocalRootSpanIDKey, RouteKey} {
		if len(k) > 15 {
			t.Errorf("label key %q is %d bytes, more than 15", k, len(k))
		}
	}
}
