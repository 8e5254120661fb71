package profiler_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pprofotel/profiler"
)

// The profiler sends over the connection the application's trace exporter
// already uses. Stop leaves it open: the application closes it afterwards.
func ExampleWithGRPCConn() {
	conn, err := grpc.NewClient("localhost:4317", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close() // runs after Stop

	p, err := profiler.Start(profiler.WithGRPCConn(conn), profiler.WithServiceName("checkout"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer p.Stop(ctx)
	// ...
}

// The profiler sends with the application's HTTP client. Its transport is
// the application's, so the bound on response headers is set there; the
// profiler still refuses redirects.
func ExampleWithHTTPClient() {
	client := &http.Client{Transport: &http.Transport{MaxResponseHeaderBytes: 64 << 10}}
	p, err := profiler.Start(profiler.WithHTTPClient(client),
		profiler.WithEndpointURL("https://collector.example:4318/v1development/profiles"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.Background())
	// ...
}
