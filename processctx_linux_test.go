//go:build linux && (amd64 || arm64)

package profiler

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/processctx/processctxtest"
)

// TestProcessContextIsTheOTLPResource reads the process context from
// outside, as the eBPF profiler does, while the profiler runs and after
// it stops: it is the resource of the OTLP requests, a second Start
// publishes it again at a later time, and Stop leaves nothing behind.
func TestProcessContextIsTheOTLPResource(t *testing.T) {
	r := newReceiver()
	endpoint := startReceiver(t, "http/protobuf", r)
	start := func() *Profiler {
		t.Helper()
		p, err := Start(
			WithExporter(httpExporter(t, endpoint+"/v1development/profiles")),
			WithServiceName("ctx-check"),
			WithResource(resource.NewSchemaless(attribute.String("deployment.environment.name", "test"))),
			WithWindow(time.Second),
		)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop(stopContext(t)) })
		return p
	}

	p := start()
	first, err := processctxtest.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, 1)
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	sent := r.requests[0].ResourceProfiles[0].Resource
	r.mu.Unlock()
	if !proto.Equal(first.Resource, sent) {
		t.Errorf("process context\n%v\nOTLP resource\n%v", first.Resource, sent)
	}
	// OTEP 4947: a Go program's readers take the thread context from the
	// pprof labels, and the schema version says so.
	var schema []string
	for _, kv := range first.ExtraAttributes {
		if kv.GetKey() == "threadlocal.schema_version" {
			schema = append(schema, kv.GetValue().GetStringValue())
		}
	}
	if len(schema) != 1 || schema[0] != "go_pprof_labels_v1" {
		t.Errorf("threadlocal.schema_version %q in the context's attributes, want exactly [go_pprof_labels_v1]", schema)
	}
	if got := first.Resource.GetAttributes(); len(got) < 5 {
		t.Errorf("process context holds %d attributes, want the detected ones besides service.name", len(got))
	}
	if _, err := processctxtest.Read(os.Getpid()); !errors.Is(err, processctxtest.ErrNotFound) {
		t.Errorf("read after Stop: %v, want %v", err, processctxtest.ErrNotFound)
	}
	if maps, err := os.ReadFile("/proc/self/maps"); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(maps), "OTEL_CTX") {
		t.Errorf("/proc/self/maps still names OTEL_CTX after Stop:\n%s", maps)
	}

	start() // stopped by its cleanup
	second, err := processctxtest.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if second.PublishedAt <= first.PublishedAt {
		t.Errorf("second Start published at %d, not later than the first, %d", second.PublishedAt, first.PublishedAt)
	}
	if !proto.Equal(second.Resource, sent) {
		t.Errorf("second process context\n%v\nwant\n%v", second.Resource, sent)
	}
}

func TestProcessContextSwitchedOff(t *testing.T) {
	tests := []struct {
		name string
		env  string
		opts []Option
	}{
		{name: "option", opts: []Option{WithProcessContext(false)}},
		{name: "variable", env: "false"},
		{name: "option over variable", env: "true", opts: []Option{WithProcessContext(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("PPROFOTEL_PROCESS_CONTEXT", tt.env)
			}
			p, err := Start(append(tt.opts, WithExporter(noneExporter{}))...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop(stopContext(t))
			if _, err := processctxtest.Read(os.Getpid()); !errors.Is(err, processctxtest.ErrNotFound) {
				t.Errorf("read while switched off: %v, want %v", err, processctxtest.ErrNotFound)
			}
		})
	}

	t.Run("invalid variable", func(t *testing.T) {
		t.Setenv("PPROFOTEL_PROCESS_CONTEXT", "no")
		c := mustConfig(t, []Option{WithExporter(noneExporter{})}, map[string]string{"PPROFOTEL_PROCESS_CONTEXT": "no"})
		if !c.processContext || !strings.Contains(fmt.Sprint(c.warnings), `PPROFOTEL_PROCESS_CONTEXT="no"`) {
			t.Fatalf("process context %v, warnings %v; want it on and a warning naming PPROFOTEL_PROCESS_CONTEXT and its value", c.processContext, c.warnings)
		}
	})
}
