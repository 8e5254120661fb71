package profiler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/delivery"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/logsgrpc"
	"github.com/pprofotel/profiler/internal/otlp"
	"github.com/pprofotel/profiler/internal/splunk"
	"github.com/pprofotel/profiler/internal/validutf8"
)

// pipeline turns the collector's windows into requests of one encoding and
// queues them for delivery. The OTLP profiles encoding and the Splunk logs
// encoding share the queue, the retries and the transport settings; only
// the conversion differs.
type pipeline interface {
	// send converts w and queues it, reporting whether there was a request
	// to queue (an encoding may have nothing to send for a window) and
	// which of its strings were repaired into valid UTF-8. It never waits
	// on the network.
	send(w collect.Window) (queued bool, repairs validutf8.Repairs, err error)
	// queued returns the number of windows waiting for export.
	queued() int
	// shutdown delivers what is queued within ctx's deadline, then closes
	// the exporter; the error names what was not delivered.
	shutdown(ctx context.Context) error
}

// exporters holds, for each ExporterKind, what builds its pipeline: the
// kinds, their validity, their spelling in PPROFOTEL_EXPORTER and in error
// messages all derive from it. Adding an exporter is one constructor and
// one row here (and its ExporterKind constant).
var exporters = []struct {
	kind ExporterKind
	// grpcOnly exporters speak OTLP/gRPC whatever the protocol settings
	// say, which are then not read.
	grpcOnly bool
	build    func(cfg *config, r reports) (pipeline, error)
}{
	{ExporterOTLP, false, func(cfg *config, r reports) (pipeline, error) {
		e, err := export.NewOTLP(otlpConfig(cfg, r))
		if err != nil {
			return nil, err
		}
		return newProfilesPipeline(cfg, r, export.WithRetry(e, cfg.retry, export.OnRetry(r.onRetry))), nil
	}},
	{ExporterFile, false, func(cfg *config, r reports) (pipeline, error) {
		fc := cfg.file
		fc.OnRemove = fileRemovals(cfg, r)
		e, err := export.NewFile(fc)
		if err != nil {
			return nil, err
		}
		return newProfilesPipeline(cfg, r, e), nil
	}},
	{ExporterNone, false, func(cfg *config, r reports) (pipeline, error) {
		return newProfilesPipeline(cfg, r, export.NewNone()), nil
	}},
	{ExporterSplunk, true, newSplunkPipeline},
}

// exporterNames lists the exporter kinds, in the order of the table.
func exporterNames() []string {
	names := make([]string, len(exporters))
	for i, e := range exporters {
		names[i] = string(e.kind)
	}
	return names
}

// grpcOnly reports whether exporter kind k speaks only OTLP/gRPC.
func grpcOnly(k ExporterKind) bool {
	for _, e := range exporters {
		if e.kind == k {
			return e.grpcOnly
		}
	}
	return false
}

// reports is where a pipeline's queue and exporter report what they did:
// the counts that Stats reads and the retry callback, both behind one
// gate. The queue's Shutdown closes the gate, so that an export it gave
// up on at Stop's deadline, still blocked in the application's transport,
// counts, logs and calls back nothing when it returns.
type reports struct {
	stats *delivery.Outcomes
	gate  *delivery.Gate
	// onRetry is called before each retry; it goes through gate.
	onRetry func(int, time.Duration, error)
}

// newPipeline builds the configured encoding with its exporter and queue.
// Exports over the network retry as cfg.retry says, calling onRetry before
// each retry; onRetry may be nil.
func newPipeline(cfg *config, stats *delivery.Outcomes, onRetry func(int, time.Duration, error)) (pipeline, error) {
	r := reports{stats: stats, gate: new(delivery.Gate)}
	if onRetry != nil {
		r.onRetry = func(attempt int, wait time.Duration, err error) {
			r.gate.Run(func() { onRetry(attempt, wait, err) })
		}
	}
	for _, e := range exporters {
		if e.kind == cfg.exporter {
			return e.build(cfg, r)
		}
	}
	return nil, fmt.Errorf("profiler: no exporter %q", cfg.exporter)
}

// otlpConfig is the OTLP transport configuration with its report of
// partial successes, which goes through r's gate.
func otlpConfig(cfg *config, r reports) export.OTLPConfig {
	c := cfg.otlp
	// A partial success is not an error, so neither the retries nor the
	// queue see it; without this the receiver's rejections would vanish.
	c.OnPartialSuccess = func(rejected int64, message string) {
		r.gate.Run(func() {
			cfg.logger.Error("pprofotel: the receiver accepted the request in part",
				"rejected", rejected, "message", message)
		})
	}
	return c
}

// fileRemovals is the file exporter's report of the files it removed to
// keep within its retention bounds, which goes through r's gate: each
// removal is counted; the first is logged at Info, as the directory is
// then full and stays so, the later ones at Debug. A failure to remove is
// a warning the first time, then Debug, as it recurs every window.
func fileRemovals(cfg *config, r reports) func(int, int64, error) {
	var removedBefore, failedBefore bool
	return func(files int, bytes int64, err error) {
		r.gate.Run(func() {
			total := r.stats.FilesRemoved.Add(int64(files))
			if files > 0 {
				level := slog.LevelDebug
				if !removedBefore {
					level, removedBefore = slog.LevelInfo, true
				}
				cfg.logger.Log(context.Background(), level, "pprofotel: oldest profile files removed to keep within the retention bounds",
					"dir", cfg.file.Dir, "removed", files, "bytes", bytes, "removed_total", total,
					"max_files", cfg.file.MaxFiles, "max_bytes", cfg.file.MaxBytes)
			}
			if err != nil {
				level := slog.LevelDebug
				if !failedBefore {
					level, failedBefore = slog.LevelWarn, true
				}
				cfg.logger.Log(context.Background(), level, "pprofotel: profile file not removed; the directory may exceed its retention bounds",
					"dir", cfg.file.Dir, "error", err)
			}
		})
	}
}

// newProfilesPipeline sends OTLP profiles requests through exp.
func newProfilesPipeline(cfg *config, r reports, exp export.Exporter) pipeline {
	return &otlpPipeline{
		builder: otlp.NewBuilder(toProtoResource(cfg.resource),
			&commonpb.InstrumentationScope{Name: ScopeName, Version: Version},
			otlp.WithExecutable(executable())),
		queue: newQueue(cfg, r, exp, otlp.Split),
	}
}

// newSplunkPipeline sends Splunk profiling logs over OTLP/gRPC.
func newSplunkPipeline(cfg *config, r reports) (pipeline, error) {
	exp, err := logsgrpc.New(otlpConfig(cfg, r))
	if err != nil {
		return nil, err
	}
	return &splunkPipeline{
		builder: otlp.NewBuilder(toProtoResource(cfg.resource),
			&commonpb.InstrumentationScope{Name: ScopeName, Version: Version},
			otlp.WithExecutable(executable())),
		options: cfg.splunk.EncodeOptions(),
		queue:   newQueue(cfg, r, export.WithRetry(exp, cfg.retry, export.OnRetry(r.onRetry)), splunk.Split),
	}, nil
}

// newQueue queues the requests of one encoding within the configured
// limits and exports them through exp, reporting to r.
func newQueue[R proto.Message](cfg *config, r reports, exp export.Sender[R], split func(R, int) ([]R, error)) *delivery.Queue[R] {
	return delivery.New(delivery.Config[R]{
		Exporter:        exp,
		Split:           split,
		MaxWindows:      cfg.delivery.maxWindows,
		MaxBytes:        cfg.delivery.maxBytes,
		MaxRequestBytes: cfg.delivery.maxRequestBytes,
		Logger:          cfg.logger,
		Outcomes:        r.stats,
		Gate:            r.gate,
	})
}

// otlpPipeline sends each window as one OTLP profiles request.
type otlpPipeline struct {
	builder *otlp.Builder
	queue   *delivery.Queue[*collectorpb.ExportProfilesServiceRequest]
}

func (o *otlpPipeline) send(w collect.Window) (bool, validutf8.Repairs, error) {
	if len(w.Profiles) == 0 {
		// A window between two reads of a profile taken less often than
		// every window (the goroutine-leak profile alone): a request would
		// hold the resource and nothing else.
		return false, validutf8.Repairs{}, nil
	}
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data, Start: prof.Start, End: prof.End}
	}
	req := o.builder.Build(w.Start, w.End, inputs)
	o.queue.Enqueue(delivery.Window[*collectorpb.ExportProfilesServiceRequest]{Start: w.Start, End: w.End, Request: req})
	return true, o.builder.Repairs(), nil
}

func (o *otlpPipeline) shutdown(ctx context.Context) error { return o.queue.Shutdown(ctx) }

func (o *otlpPipeline) queued() int { n, _ := o.queue.Len(); return n }

// splunkPipeline sends each window as OTLP logs in Splunk's profiling
// format, encoded from the window's OTLP profiles request.
type splunkPipeline struct {
	builder *otlp.Builder
	options splunk.EncodeOptions
	queue   *delivery.Queue[*collogspb.ExportLogsServiceRequest]
}

func (s *splunkPipeline) send(w collect.Window) (bool, validutf8.Repairs, error) {
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data, Start: prof.Start, End: prof.End}
	}
	req, err := splunk.Encode(s.builder.Build(w.Start, w.End, inputs), s.options)
	repairs := s.builder.Repairs()
	if err != nil || req == nil { // nil: nothing in the window to send
		return false, repairs, err
	}
	s.queue.Enqueue(delivery.Window[*collogspb.ExportLogsServiceRequest]{Start: w.Start, End: w.End, Request: req})
	return true, repairs, nil
}

func (s *splunkPipeline) shutdown(ctx context.Context) error { return s.queue.Shutdown(ctx) }

func (s *splunkPipeline) queued() int { n, _ := s.queue.Len(); return n }
