package autoexport_test

import (
	"context"
	"log"
	"os"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/autoexport"
)

// A program that builds the exporter itself, to share it or wrap it, gets
// the one the environment names as the profiler would.
func ExampleNewExporter() {
	os.Setenv("OTEL_PROFILES_EXPORTER", "none")
	exp, err := autoexport.NewExporter(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	p, err := profiler.Start(profiler.WithExporter(exp))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.Background())
	// Output:
}
