package otlpprofilegrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
)

// receiver is a stand-in for a Collector's OTLP/gRPC receiver.
type receiver struct {
	collectorpb.UnimplementedProfilesServiceServer
}

func (receiver) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	fmt.Println("received", len(req.GetResourceProfiles()), "resource")
	return &collectorpb.ExportProfilesServiceResponse{}, nil
}

func Example() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	collectorpb.RegisterProfilesServiceServer(srv, receiver{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	ctx := context.Background()
	exp, err := otlpprofilegrpc.New(ctx,
		otlpprofilegrpc.WithEndpoint(lis.Addr().String()),
		otlpprofilegrpc.WithInsecure(),
		otlpprofilegrpc.WithCompressor("gzip"),
	)
	if err != nil {
		log.Fatal(err)
	}
	// The profiler calls Export once a window; here, one small request.
	req := &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{}}}
	if err := exp.Export(ctx, req); err != nil {
		log.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// received 1 resource
}
