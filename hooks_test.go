package profiler

import (
	"context"
	"testing"

	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/collect"
)

// withRuntime puts source and cpu in place of the runtime's profiles and
// CPU profiler, for tests that record or script what the collector reads.
// A nil source keeps the runtime's profiles; a zero cpu, its CPU profiler.
func withRuntime(source collect.Source, cpu collect.CPUProfiler) Option {
	return optionFunc(func(o *options) { o.runtime.source, o.runtime.cpu = source, cpu })
}

// shortWindows lowers the floors of the window and of the CPU recording to
// a millisecond, so that tests run windows of milliseconds.
func shortWindows() Option {
	return optionFunc(func(o *options) { o.runtime.short = true })
}

// fileExporter writes the windows into dir, in OTLP protobuf unless opts
// say otherwise.
func fileExporter(t testing.TB, dir string, opts ...otlpprofilefile.Option) Exporter {
	t.Helper()
	e, err := otlpprofilefile.New(context.Background(), append([]otlpprofilefile.Option{otlpprofilefile.WithDir(dir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fileExporterJSON writes the windows into dir, in OTLP/JSON.
func fileExporterJSON(t testing.TB, dir string) Exporter {
	return fileExporter(t, dir, otlpprofilefile.WithJSON())
}

// grpcExporter sends the windows over OTLP/gRPC to url.
func grpcExporter(t testing.TB, url string, opts ...otlpprofilegrpc.Option) Exporter {
	t.Helper()
	e, err := otlpprofilegrpc.New(context.Background(), append([]otlpprofilegrpc.Option{otlpprofilegrpc.WithEndpointURL(url)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// httpExporter sends the windows over OTLP/HTTP to url, the full profiles
// URL.
func httpExporter(t testing.TB, url string, opts ...otlpprofilehttp.Option) Exporter {
	t.Helper()
	e, err := otlpprofilehttp.New(context.Background(), append([]otlpprofilehttp.Option{otlpprofilehttp.WithEndpointURL(url)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
