package opamp

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/pprofotel/profiler"
)

// identifying are the resource attributes that tell one agent from
// another, as the OpAMP specification's AgentDescription has them; the
// resource's other attributes are reported as non-identifying.
var identifying = map[attribute.Key]bool{
	semconv.ServiceNameKey:       true,
	semconv.ServiceNamespaceKey:  true,
	semconv.ServiceInstanceIDKey: true,
	semconv.ServiceVersionKey:    true,
}

// agentDescription describes the agent by the profiler's resource. When
// the resource has no service.instance.id, the client's instance id
// stands in for it, so that two processes of one service can be told
// apart; the profiles do not carry it.
func agentDescription(res []attribute.KeyValue, uid uuid.UUID) *protobufs.AgentDescription {
	d := &protobufs.AgentDescription{}
	hasInstance := false
	for _, kv := range res {
		pkv := &protobufs.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
		if identifying[kv.Key] {
			hasInstance = hasInstance || kv.Key == semconv.ServiceInstanceIDKey
			d.IdentifyingAttributes = append(d.IdentifyingAttributes, pkv)
		} else {
			d.NonIdentifyingAttributes = append(d.NonIdentifyingAttributes, pkv)
		}
	}
	if !hasInstance {
		d.IdentifyingAttributes = append(d.IdentifyingAttributes, &protobufs.KeyValue{
			Key: string(semconv.ServiceInstanceIDKey), Value: anyValue(attribute.StringValue(uid.String())),
		})
	}
	return d
}

func anyValue(v attribute.Value) *protobufs.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &protobufs.AnyValue{Value: &protobufs.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &protobufs.AnyValue{Value: &protobufs.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &protobufs.AnyValue{Value: &protobufs.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	default:
		// Strings, and slices in their JSON form: a description, not
		// data to compute with.
		return &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v.String()}}
	}
}

// health is the health the client reports. Its "exporter" component is
// healthy unless windows failed or were dropped since the previous report
// (prev, nil for none), and its status counts the windows. The profiler is
// healthy while it runs, paused or not, and once stopped as its exporter.
func (c *Client) health(prev *profiler.Stats) *protobufs.ComponentHealth {
	now := uint64(c.clock.Now().UnixNano())
	s := c.stats()
	status := "running"
	select {
	case <-c.target.Done():
		status = "stopped"
	default:
		if !c.target.Effective().Enabled {
			status = "paused"
		}
	}
	exporter := &protobufs.ComponentHealth{
		Healthy:            true,
		StartTimeUnixNano:  uint64(c.start.UnixNano()),
		StatusTimeUnixNano: now,
		Status: fmt.Sprintf("windows collected %d, exported %d, failed %d, dropped %d, queued %d",
			s.WindowsCollected, s.WindowsExported, s.WindowsFailed, s.WindowsDropped, s.WindowsQueued),
	}
	if prev == nil {
		prev = &profiler.Stats{} // the first report: since the start
	}
	if failed, dropped := s.WindowsFailed-prev.WindowsFailed, s.WindowsDropped-prev.WindowsDropped; failed+dropped > 0 {
		exporter.Healthy = false
		exporter.LastError = fmt.Sprintf("%d windows failed and %d dropped since the previous report", failed, dropped)
	}
	return &protobufs.ComponentHealth{
		// A profiler stopped by its application is healthy, unless
		// its last windows failed.
		Healthy:            status != "stopped" || exporter.Healthy,
		StartTimeUnixNano:  uint64(c.start.UnixNano()),
		StatusTimeUnixNano: now,
		Status:             status,
		ComponentHealthMap: map[string]*protobufs.ComponentHealth{"exporter": exporter},
	}
}

// reportHealth sends the health.
func (c *Client) reportHealth(st *loopState) {
	s := c.stats()
	_ = c.opamp.SetHealth(c.health(st.prevStats))
	st.prevStats = &s
}
