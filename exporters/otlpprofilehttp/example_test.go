package otlpprofilehttp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
)

func Example() {
	// A stand-in for a Collector's OTLP/HTTP receiver, on loopback.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"))
	}))
	defer receiver.Close()

	ctx := context.Background()
	exp, err := otlpprofilehttp.New(ctx,
		otlpprofilehttp.WithEndpointURL(receiver.URL+"/v1development/profiles"),
		otlpprofilehttp.WithCompression(otlpprofilehttp.GzipCompression),
		otlpprofilehttp.WithTimeout(5*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	// The profiler calls Export once a window; here, one empty request.
	if err := exp.Export(ctx, &collectorpb.ExportProfilesServiceRequest{}); err != nil {
		log.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// POST /v1development/profiles application/x-protobuf gzip
}

func ExampleWithMaxRequestBytes() {
	_, err := otlpprofilehttp.New(context.Background(), otlpprofilehttp.WithMaxRequestBytes(128<<20))
	fmt.Println(err)
	// Output:
	// otlpprofilehttp: WithMaxRequestBytes(134217728): must be at most 67108864 (64 MiB): OTLP clients must not send larger requests
}
