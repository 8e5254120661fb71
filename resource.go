package profiler

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/pprofotel/profiler/internal/validutf8"
)

// resourceInputs are the sources of the resource, already read from
// options and the environment.
type resourceInputs struct {
	serviceName    string             // WithServiceName
	user           *resource.Resource // WithResource
	envServiceName string             // OTEL_SERVICE_NAME
	envAttrs       []attribute.KeyValue
}

// buildResource merges, each layer over the previous one:
//
//  1. service.name "unknown_service:<executable name>", as the
//     specification asks when no name is configured;
//  2. telemetry.sdk.* naming this profiler (name "pprofotel", language
//     "go", version Version) rather than the OpenTelemetry Go SDK, which
//     does not produce these profiles: the attributes of otel-go's
//     resource.Default(), and no more. Backends that store profiles by
//     series make every resource attribute a series label (Grafana
//     Pyroscope: at most 30 label names per series, a request over it
//     rejected whole), and some detected attributes change at every
//     restart (process.pid, host.name of a Kubernetes pod), which starts a
//     new set of series each time. Detectors a service wants are one
//     WithResource away;
//  3. OTEL_RESOURCE_ATTRIBUTES;
//  4. OTEL_SERVICE_NAME;
//  5. WithResource;
//  6. WithServiceName.
//
// So code wins over the environment, and the environment over detection.
// The executable's name, for the fallback service name, comes from
// detection; when that fails the name is "unknown_service", and the failure
// is logged at debug level.
//
// Keys and string values that are not valid UTF-8 are repaired (see
// validUTF8Resource): proto3 requires valid UTF-8 of every string, and one
// invalid attribute would cost every request. buildResource returns what
// it repaired.
func buildResource(ctx context.Context, in resourceInputs, logger *slog.Logger) (*resource.Resource, resourceRepairs) {
	detected := resource.NewSchemaless(
		semconv.TelemetrySDKNameKey.String("pprofotel"),
		semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKVersionKey.String(Version),
	)

	unknown := "unknown_service"
	exe, err := resource.New(ctx, resource.WithProcessExecutableName())
	if err != nil {
		logger.Debug("pprofotel: resource detection incomplete", "error", err)
	}
	if name, ok := exe.Set().Value(semconv.ProcessExecutableNameKey); ok && name.AsString() != "" {
		unknown += ":" + name.AsString()
	}

	layers := []*resource.Resource{
		resource.NewSchemaless(semconv.ServiceName(unknown)),
		detected,
		resource.NewSchemaless(in.envAttrs...),
	}
	if in.envServiceName != "" {
		layers = append(layers, resource.NewSchemaless(semconv.ServiceName(in.envServiceName)))
	}
	layers = append(layers, in.user)
	if in.serviceName != "" {
		layers = append(layers, resource.NewSchemaless(semconv.ServiceName(in.serviceName)))
	}

	merged := resource.Empty()
	for _, r := range layers {
		m, err := resource.Merge(merged, r)
		if err != nil {
			// Merge fails only when schema URLs differ, and then still
			// returns every attribute, without a schema URL. The
			// attributes matter more than the schema, so keep them.
			logger.Debug("pprofotel: resource schema URLs differ", "error", err)
		}
		merged = m
	}
	return validUTF8Resource(merged)
}

// resourceRepairs is what validUTF8Resource repaired.
type resourceRepairs struct {
	// n counts the keys and string values repaired, elements of slices
	// and maps included.
	n int64
	// keys lists the (repaired) keys of the attributes repaired, for the
	// log: the value is left out of it.
	keys []string
}

// validUTF8Resource returns r with every key and string value that is not
// valid UTF-8 repaired, as package validutf8 repairs the profiles'
// strings. It returns r itself when nothing needed repair, the common case.
func validUTF8Resource(r *resource.Resource) (*resource.Resource, resourceRepairs) {
	var fix validutf8.Repairs
	var keys []string
	attrs := r.Attributes()
	for i, kv := range attrs {
		before := fix.N
		kv = validUTF8Attribute(kv, &fix)
		if fix.N != before {
			attrs[i] = kv
			keys = append(keys, string(kv.Key))
		}
	}
	if fix.N == 0 {
		return r, resourceRepairs{}
	}
	// A repaired key may now equal another; the resource keeps the last.
	return resource.NewWithAttributes(r.SchemaURL(), attrs...), resourceRepairs{n: fix.N, keys: keys}
}

// validUTF8Attribute repairs kv's key and value.
func validUTF8Attribute(kv attribute.KeyValue, fix *validutf8.Repairs) attribute.KeyValue {
	return attribute.KeyValue{Key: attribute.Key(fix.String(string(kv.Key))), Value: validUTF8Value(kv.Value, fix)}
}

// validUTF8Value repairs the strings of v, nested slices and maps
// included. It returns v itself when they are valid.
func validUTF8Value(v attribute.Value, fix *validutf8.Repairs) attribute.Value {
	before := fix.N
	var out attribute.Value
	switch v.Type() {
	case attribute.STRING:
		out = attribute.StringValue(fix.String(v.AsString()))
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice()
		for i, s := range ss {
			ss[i] = fix.String(s)
		}
		out = attribute.StringSliceValue(ss)
	case attribute.SLICE:
		vs := v.AsSlice()
		for i, e := range vs {
			vs[i] = validUTF8Value(e, fix)
		}
		out = attribute.SliceValue(vs...)
	case attribute.MAP:
		kvs := v.AsMap()
		for i, e := range kvs {
			kvs[i] = validUTF8Attribute(e, fix)
		}
		out = attribute.MapValue(kvs...)
	}
	if fix.N == before {
		return v
	}
	return out
}

// toProtoResource converts r to its OTLP form, attributes sorted by key.
func toProtoResource(r *resource.Resource) *resourcepb.Resource {
	attrs := r.Attributes() // sorted by key
	out := &resourcepb.Resource{Attributes: make([]*commonpb.KeyValue, 0, len(attrs))}
	for _, kv := range attrs {
		out.Attributes = append(out.Attributes, &commonpb.KeyValue{
			Key:   string(kv.Key),
			Value: toProtoValue(kv.Value),
		})
	}
	return out
}

// toProtoValue converts every attribute type, nested slices and maps
// included. An empty value becomes an AnyValue with no field set, which
// OTLP defines as empty.
func toProtoValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrayValue(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayValue(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayValue(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayValue(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return arrayValue(v.AsSlice(), func(e attribute.Value) attribute.Value { return e })
	case attribute.MAP:
		kvs := v.AsMap()
		list := &commonpb.KeyValueList{Values: make([]*commonpb.KeyValue, 0, len(kvs))}
		for _, kv := range kvs {
			list.Values = append(list.Values, &commonpb.KeyValue{Key: string(kv.Key), Value: toProtoValue(kv.Value)})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: list}}
	default:
		return &commonpb.AnyValue{}
	}
}

func arrayValue[T any](elems []T, value func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, 0, len(elems))}
	for _, e := range elems {
		arr.Values = append(arr.Values, toProtoValue(value(e)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
