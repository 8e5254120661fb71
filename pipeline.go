package profiler

import (
	"context"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/delivery"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/otlp"
	"github.com/pprofotel/profiler/internal/splunk"
)

// pipeline turns the collector's windows into requests of one encoding and
// queues them for delivery. The OTLP profiles encoding and the Splunk logs
// encoding share the queue, the retries and the transport settings; only
// the conversion differs.
type pipeline interface {
	// send converts w and queues it, reporting whether there was a request
	// to queue: an encoding may have nothing to send for a window. It
	// never waits on the network.
	send(w collect.Window) (queued bool, err error)
	// queued returns the number of windows waiting for export.
	queued() int
	// shutdown delivers what is queued within ctx's deadline, then closes
	// the exporter; the error names what was not delivered.
	shutdown(ctx context.Context) error
}

// newPipeline builds the configured encoding with its exporter and queue.
// Exports over the network retry as cfg.retry says, calling onRetry before
// each retry.
func newPipeline(cfg *config, stats *delivery.Stats, onRetry func(int, time.Duration, error)) (pipeline, error) {
	res := toProtoResource(cfg.resource)
	otlpCfg := cfg.otlp
	// A partial success is not an error, so neither the retries nor the
	// sender see it; without this the receiver's rejections would vanish.
	otlpCfg.OnPartialSuccess = func(rejected int64, message string) {
		cfg.logger.Warn("pprofotel: the receiver accepted the request in part",
			"rejected", rejected, "message", message)
	}
	if cfg.exporter == ExporterSplunk {
		exp, err := export.NewLogsGRPC(otlpCfg)
		if err != nil {
			return nil, err
		}
		return &splunkPipeline{
			resource: res,
			options:  cfg.splunk.EncodeOptions(),
			sender:   newSender(cfg, stats, export.WithRetry(exp, cfg.retry, export.OnRetry(onRetry)), splunk.Split),
		}, nil
	}

	var exp export.Exporter
	switch cfg.exporter {
	case ExporterFile:
		e, err := export.NewFile(cfg.file)
		if err != nil {
			return nil, err
		}
		exp = e
	case ExporterNone:
		exp = export.NewNone()
	default:
		e, err := export.NewOTLP(otlpCfg)
		if err != nil {
			return nil, err
		}
		exp = export.WithRetry(e, cfg.retry, export.OnRetry(onRetry))
	}
	return &otlpPipeline{
		builder: otlp.NewBuilder(res,
			&commonpb.InstrumentationScope{Name: ScopeName, Version: Version},
			otlp.WithExecutable(executable())),
		sender: newSender(cfg, stats, exp, otlp.Split),
	}, nil
}

// newSender queues the requests of one encoding within the configured
// limits and exports them through exp.
func newSender[R proto.Message](cfg *config, stats *delivery.Stats, exp export.Sender[R], split func(R, int) ([]R, error)) *delivery.Sender[R] {
	return delivery.New(delivery.Config[R]{
		Exporter:        exp,
		Split:           split,
		MaxWindows:      cfg.delivery.maxWindows,
		MaxBytes:        cfg.delivery.maxBytes,
		MaxRequestBytes: cfg.delivery.maxRequestBytes,
		Logger:          cfg.logger,
		Stats:           stats,
	})
}

// otlpPipeline sends each window as one OTLP profiles request.
type otlpPipeline struct {
	builder *otlp.Builder
	sender  *delivery.Sender[*collectorpb.ExportProfilesServiceRequest]
}

func (o *otlpPipeline) send(w collect.Window) (bool, error) {
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data}
	}
	req := o.builder.Build(w.Start, w.End, inputs)
	o.sender.Enqueue(delivery.Window[*collectorpb.ExportProfilesServiceRequest]{Start: w.Start, End: w.End, Request: req})
	return true, nil
}

func (o *otlpPipeline) shutdown(ctx context.Context) error { return o.sender.Shutdown(ctx) }

func (o *otlpPipeline) queued() int { n, _ := o.sender.Len(); return n }

// splunkPipeline sends each window as OTLP logs in Splunk's profiling
// format.
type splunkPipeline struct {
	resource *resourcepb.Resource
	options  splunk.EncodeOptions
	sender   *delivery.Sender[*collogspb.ExportLogsServiceRequest]
}

func (s *splunkPipeline) send(w collect.Window) (bool, error) {
	req, err := splunk.Encode(w, s.resource, s.options)
	if err != nil || req == nil { // nil: nothing in the window to send
		return false, err
	}
	s.sender.Enqueue(delivery.Window[*collogspb.ExportLogsServiceRequest]{Start: w.Start, End: w.End, Request: req})
	return true, nil
}

func (s *splunkPipeline) shutdown(ctx context.Context) error { return s.sender.Shutdown(ctx) }

func (s *splunkPipeline) queued() int { n, _ := s.sender.Len(); return n }
