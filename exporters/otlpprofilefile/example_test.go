package otlpprofilefile_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
)

func Example() {
	dir, err := os.MkdirTemp("", "profiles")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	exp, err := otlpprofilefile.New(ctx,
		otlpprofilefile.WithDir(dir),
		otlpprofilefile.WithMaxFiles(2), // keep the two newest windows
	)
	if err != nil {
		log.Fatal(err)
	}
	// The profiler calls Export once a window; here, three small requests.
	for range 3 {
		req := &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{}}}
		if err := exp.Export(ctx, req); err != nil {
			log.Fatal(err)
		}
	}
	if err := exp.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "profiles-*.pb"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(files), "files")
	// Output:
	// 2 files
}
