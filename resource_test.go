package profiler

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func resourceValue(t *testing.T, r *resource.Resource, key string) string {
	t.Helper()
	v, ok := r.Set().Value(attribute.Key(key))
	if !ok {
		t.Fatalf("resource has no %s: %v", key, r)
	}
	return v.Emit()
}

func TestResourceServiceName(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("os.Executable: %v", err)
	}
	userRes := resource.NewSchemaless(attribute.String("service.name", "from-resource"))

	tests := []struct {
		name string
		opts []Option
		env  map[string]string
		want string
	}{
		{"nothing configured", nil, nil, "unknown_service:" + filepath.Base(exe)},
		{"OTEL_RESOURCE_ATTRIBUTES", nil,
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs"}, "from-attrs"},
		{"OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES", nil,
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs", "OTEL_SERVICE_NAME": "from-env"},
			"from-env"},
		{"WithResource over OTEL_SERVICE_NAME", []Option{WithResource(userRes)},
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs", "OTEL_SERVICE_NAME": "from-env"},
			"from-resource"},
		{"WithServiceName over WithResource", []Option{WithServiceName("from-option"), WithResource(userRes)},
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs", "OTEL_SERVICE_NAME": "from-env"},
			"from-option"},
		{"WithServiceName alone", []Option{WithServiceName("from-option")}, nil, "from-option"},
		{"WithResource without service.name", []Option{WithResource(resource.NewSchemaless(attribute.String("team", "x")))},
			map[string]string{"OTEL_SERVICE_NAME": "from-env"}, "from-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, tt.env)
			if got := resourceValue(t, c.resource, "service.name"); got != tt.want {
				t.Errorf("service.name = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestResourceDefault checks that the default resource holds what otel-go's
// resource.Default() holds and nothing more: every resource attribute is a
// series label in backends like Pyroscope, and process.pid or host.name
// would start new series at every restart.
func TestResourceDefault(t *testing.T) {
	c := mustConfig(t, nil, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	want := map[string]string{
		"service.name":           "unknown_service:" + filepath.Base(exe),
		"telemetry.sdk.name":     "pprofotel",
		"telemetry.sdk.language": "go",
		"telemetry.sdk.version":  Version,
	}
	got := map[string]string{}
	for _, kv := range c.resource.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	if !maps.Equal(got, want) {
		t.Errorf("default resource = %v, want %v", got, want)
	}
}

// TestResourceDetectorsOneOptionAway checks that the detectors left out by
// default come back with WithResource, merged with the defaults.
func TestResourceDetectorsOneOptionAway(t *testing.T) {
	detected, err := resource.New(context.Background(), resource.WithHost(), resource.WithProcessPID(), resource.WithProcessRuntimeVersion())
	if err != nil {
		t.Fatal(err)
	}
	c := mustConfig(t, []Option{WithResource(detected)}, nil)
	host, _ := os.Hostname()
	for k, v := range map[string]string{
		"host.name":               host,
		"process.pid":             strconv.Itoa(os.Getpid()),
		"process.runtime.version": runtime.Version(),
		"telemetry.sdk.name":      "pprofotel",
	} {
		if got := resourceValue(t, c.resource, k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestResourcePrecedence(t *testing.T) {
	env := map[string]string{
		"OTEL_RESOURCE_ATTRIBUTES": "host.name=env-host,deployment.environment.name=staging,team=a%2Cb",
	}
	// A schema URL different from the detectors' must not lose attributes.
	user := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.4.0",
		attribute.String("host.name", "code-host"),
		attribute.Int64("shard", 7),
	)
	tests := []struct {
		name string
		opts []Option
		want map[string]string
	}{
		{"environment over detection", nil, map[string]string{
			"host.name":                   "env-host",
			"deployment.environment.name": "staging",
			"team":                        "a,b",
			"telemetry.sdk.name":          "pprofotel",
		}},
		{"code over environment", []Option{WithResource(user)}, map[string]string{
			"host.name":                   "code-host",
			"deployment.environment.name": "staging",
			"shard":                       "7",
			"telemetry.sdk.name":          "pprofotel",
		}},
		{"nil resource adds nothing", []Option{WithResource(nil)}, map[string]string{
			"host.name": "env-host",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, env)
			for k, v := range tt.want {
				if got := resourceValue(t, c.resource, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestToProtoResource(t *testing.T) {
	r := resource.NewSchemaless(
		attribute.String("z.string", "s"),
		attribute.Bool("a.bool", true),
		attribute.Int64("b.int", -42),
		attribute.Float64("c.float", 2.5),
		attribute.BoolSlice("d.bools", []bool{true, false}),
		attribute.Int64Slice("e.ints", []int64{1, 2, 3}),
		attribute.Float64Slice("f.floats", []float64{0.5}),
		attribute.StringSlice("g.strings", []string{"x", "y"}),
		attribute.ByteSlice("h.bytes", []byte{0, 0xff}),
		attribute.Slice("i.slice", attribute.StringValue("nested"), attribute.Int64Value(9)),
		attribute.Map("j.map", attribute.Bool("inner", false), attribute.StringSlice("list", []string{"l"})),
	)
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	boolean := func(b bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
	}
	integer := func(i int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
	}
	double := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	array := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }

	want := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		kv("a.bool", boolean(true)),
		kv("b.int", integer(-42)),
		kv("c.float", double(2.5)),
		kv("d.bools", array(boolean(true), boolean(false))),
		kv("e.ints", array(integer(1), integer(2), integer(3))),
		kv("f.floats", array(double(0.5))),
		kv("g.strings", array(str("x"), str("y"))),
		kv("h.bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 0xff}}}),
		kv("i.slice", array(str("nested"), integer(9))),
		kv("j.map", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: []*commonpb.KeyValue{kv("inner", boolean(false)), kv("list", array(str("l")))},
		}}}),
		kv("z.string", str("s")),
	}}
	if got := toProtoResource(r); !proto.Equal(got, want) {
		t.Errorf("toProtoResource =\n%v\nwant\n%v", got, want)
	}

	if got := toProtoResource(nil); len(got.GetAttributes()) != 0 {
		t.Errorf("toProtoResource(nil) = %v, want no attributes", got)
	}
	if got := toProtoValue(attribute.Value{}); got.GetValue() != nil {
		t.Errorf("toProtoValue(empty) = %v, want an empty AnyValue", got)
	}
}

func TestToProtoResourceOfConfig(t *testing.T) {
	c := mustConfig(t, []Option{WithServiceName("svc")}, nil)
	pr := toProtoResource(c.resource)
	if len(pr.Attributes) != c.resource.Len() {
		t.Fatalf("%d attributes, want %d", len(pr.Attributes), c.resource.Len())
	}
	for i := 1; i < len(pr.Attributes); i++ {
		if pr.Attributes[i-1].Key >= pr.Attributes[i].Key {
			t.Errorf("attributes not sorted: %q before %q", pr.Attributes[i-1].Key, pr.Attributes[i].Key)
		}
	}
	found := false
	for _, a := range pr.Attributes {
		if a.Key == "service.name" {
			found = a.Value.GetStringValue() == "svc"
		}
	}
	if !found {
		t.Errorf("service.name=svc missing from %v", pr)
	}
}

// TestResourceRepairsInvalidUTF8 checks that every string of the resource,
// whichever source set it and however deeply nested, reaches the proto as
// valid UTF-8, and that the repairs are counted and name their attributes.
func TestResourceRepairsInvalidUTF8(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		env      map[string]string
		key      string
		want     *commonpb.AnyValue // as toProtoResource gives it
		repaired int64
		keys     []string
	}{
		{
			name: "environment value",
			env:  map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "deployment=%FF%FE"},
			key:  "deployment", want: strValue("\uFFFD"), repaired: 1, keys: []string{"deployment"},
		},
		{
			name: "environment key",
			env:  map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "dep\xe9loyment=blue"}, // keys are not percent-decoded
			key:  "dep\uFFFDloyment", want: strValue("blue"), repaired: 1, keys: []string{"dep\uFFFDloyment"},
		},
		{
			name: "OTEL_SERVICE_NAME",
			env:  map[string]string{"OTEL_SERVICE_NAME": "caf\xe9"},
			key:  "service.name", want: strValue("caf\uFFFD"), repaired: 1, keys: []string{"service.name"},
		},
		{
			name: "WithResource key",
			opts: []Option{WithResource(resource.NewSchemaless(attribute.String("r\xffegion", "eu")))},
			key:  "r\uFFFDegion", want: strValue("eu"), repaired: 1, keys: []string{"r\uFFFDegion"},
		},
		{
			name: "WithResource string slice",
			opts: []Option{WithResource(resource.NewSchemaless(attribute.StringSlice("zones", []string{"a", "b\xc3"})))},
			key:  "zones", want: arrayValue([]string{"a", "b\uFFFD"}, attribute.StringValue), repaired: 1, keys: []string{"zones"},
		},
		{
			name: "WithResource nested",
			opts: []Option{WithResource(resource.NewSchemaless(attribute.Map("k8s",
				attribute.String("ns\x80", "x"), attribute.Slice("list", attribute.StringValue("\xfe"), attribute.Int64Value(3)))))},
			key: "k8s",
			want: toProtoValue(attribute.MapValue(attribute.String("ns\uFFFD", "x"),
				attribute.Slice("list", attribute.StringValue("\uFFFD"), attribute.Int64Value(3)))),
			repaired: 2, keys: []string{"k8s"},
		},
		{
			name: "valid",
			opts: []Option{WithServiceName("café")},
			key:  "service.name", want: strValue("café"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, tt.env)
			pr := toProtoResource(c.resource)
			if _, err := proto.Marshal(pr); err != nil {
				t.Fatalf("the resource does not encode: %v", err)
			}
			var got *commonpb.AnyValue
			for _, kv := range pr.Attributes {
				if kv.Key == tt.key {
					got = kv.Value
				}
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("%s = %v, want %v", tt.key, got, tt.want)
			}
			if r := c.resourceRepairs; r.n != tt.repaired || !slices.Equal(r.keys, tt.keys) {
				t.Errorf("repairs = %d of %q, want %d of %q", r.n, r.keys, tt.repaired, tt.keys)
			}
		})
	}
}

func strValue(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
