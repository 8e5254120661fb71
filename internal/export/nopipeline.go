package export

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc/codes"
)

// NoProfilesPipeline reports whether err, an Export's error, is the answer
// of a receiver that takes no profiles at the address it was sent to: an
// HTTP 404 or a gRPC Unimplemented. An OpenTelemetry Collector whose
// pipelines are for other signals answers so, its OTLP receiver serving
// only the paths and services of the signals it has pipelines for.
func NoProfilesPipeline(err error) bool {
	var ee *ExportError
	if !errors.As(err, &ee) {
		return false
	}
	if ee.Status != nil {
		return ee.Status.Code() == codes.Unimplemented
	}
	return ee.StatusCode == http.StatusNotFound
}

// noPipelineWarning is an Exporter that calls warn the first time an
// export fails as NoProfilesPipeline detects.
type noPipelineWarning struct {
	Exporter
	warn   func(err error)
	warned atomic.Bool
}

// WarnNoProfilesPipeline returns e, whose first export that fails as
// NoProfilesPipeline detects calls warn with the failure, once in the
// exporter's life: the explanation is worth reading once, and the
// profiler reports every window that is not delivered anyway.
func WarnNoProfilesPipeline(e Exporter, warn func(err error)) Exporter {
	return &noPipelineWarning{Exporter: e, warn: warn}
}

func (e *noPipelineWarning) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	err := e.Exporter.Export(ctx, req)
	if err != nil && NoProfilesPipeline(err) && e.warned.CompareAndSwap(false, true) {
		e.warn(err)
	}
	return err
}
