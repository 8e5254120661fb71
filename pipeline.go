package profiler

import (
	"context"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/deliver"
	"github.com/pprofotel/profiler/internal/validutf8"
)

// pipeline turns the collector's windows into OTLP profiles requests and
// queues them for the exporter, which the queue calls from its own
// goroutine: the profiler's loop never waits on the network.
type pipeline struct {
	builder *otlp.Builder
	queue   *deliver.Queue
}

// newPipeline builds the converter and the queue in front of cfg's
// exporter; stats receives what the queue and the exporter report.
func newPipeline(cfg *config, stats *deliver.Outcomes) *pipeline {
	return &pipeline{
		builder: otlp.NewBuilder(toProtoResource(cfg.resource),
			&commonpb.InstrumentationScope{Name: ScopeName, Version: Version},
			otlp.WithExecutable(executable())),
		queue: deliver.New(deliver.Config{
			Exporter:   cfg.exporter,
			MaxWindows: cfg.maxWindows,
			MaxBytes:   cfg.maxBytes,
			Logger:     cfg.logger,
			Outcomes:   stats,
		}),
	}
}

// send converts w and queues it, reporting whether there was a request to
// queue and which of its strings were repaired into valid UTF-8. It never
// waits on the network.
func (p *pipeline) send(w collect.Window) (queued bool, repairs validutf8.Repairs, err error) {
	if len(w.Profiles) == 0 {
		// A window between two reads of a profile taken less often than
		// every window (the goroutine-leak profile alone), or whose only
		// profile was skipped: a request would hold the resource and
		// nothing else.
		return false, validutf8.Repairs{}, nil
	}
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data, Start: prof.Start, End: prof.End}
	}
	req := p.builder.Build(w.Start, w.End, inputs)
	p.queue.Enqueue(deliver.Window{Start: w.Start, End: w.End, Request: req})
	return true, p.builder.Repairs(), nil
}

// queued returns the number of windows waiting for export.
func (p *pipeline) queued() int { n, _ := p.queue.Len(); return n }

// shutdown delivers what is queued within ctx's deadline, then shuts the
// exporter down; the error names what was not delivered.
func (p *pipeline) shutdown(ctx context.Context) error { return p.queue.Shutdown(ctx) }
