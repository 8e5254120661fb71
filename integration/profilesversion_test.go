package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
)

// versionKey is the request header (HTTP) and metadata key (gRPC) of the
// OTLP Profiles development version.
const versionKey = "otlp-profiles-development-version"

// TestProfilesDevelopmentVersion checks, against the real Collector and
// over each OTLP transport, the profiles development version header: the
// requests of the exporter carry version 1, even when told to send a
// header of that name with another value, and the Collector takes them; a
// request sent by a plain client is taken without the header and with
// version 1, and refused before it is decoded with version 2 or with the
// header given twice: gRPC InvalidArgument, HTTP 400 with a status of
// InvalidArgument, naming the header. Every request taken reaches the
// file exporter; a refused one does not.
func TestProfilesDevelopmentVersion(t *testing.T) {
	col := startCollector(t)

	tests := []struct {
		protocol protocol
		addr     string
		// wantRefusal is how the Collector answers a version it refuses.
		wantRefusal string
	}{
		{protocolGRPC, col.GRPCAddr, "InvalidArgument"},
		{protocolHTTPProtobuf, col.HTTPAddr, "400 Bad Request InvalidArgument"},
		{protocolHTTPJSON, col.HTTPAddr, "400 Bad Request InvalidArgument"},
	}
	for _, tt := range tests {
		t.Run(string(tt.protocol), func(t *testing.T) {
			prefix := "pprofotel-version-" + strings.ReplaceAll(string(tt.protocol), "/", "-")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			exp, sent := newVersionExporter(t, tt.protocol, tt.addr)
			if err := exp.Export(ctx, versionRequest(prefix+"-exporter")); err != nil {
				t.Fatalf("the exporter's request was refused: %v", err)
			}
			if got := sent.all(); len(got) != 1 || !slices.Equal(got[0], []string{"1"}) {
				t.Errorf("the exporter sent %s %q, want one request with [1]", versionKey, got)
			}
			arrive := []string{prefix + "-exporter"}

			cases := []struct {
				name    string
				version []string // nil: no header
				refused bool
			}{
				{"absent", nil, false},
				{"1", []string{"1"}, false},
				{"2", []string{"2"}, true},
				{"1-twice", []string{"1", "1"}, true},
			}
			var refused []string
			for _, c := range cases {
				service := prefix + "-raw-" + c.name
				answer := sendWithVersion(t, ctx, tt.protocol, tt.addr, versionRequest(service), c.version)
				switch {
				case !c.refused && answer.accepted():
					arrive = append(arrive, service)
				case !c.refused:
					t.Errorf("header %s: the Collector refused the request: %s", c.name, answer)
				case answer.status != tt.wantRefusal || !strings.Contains(answer.message, versionKey):
					t.Errorf("header %s: the Collector answered %s, want %s naming %s", c.name, answer, tt.wantRefusal, versionKey)
					refused = append(refused, service)
				default:
					t.Logf("header %s: the Collector answered %s", c.name, answer)
					refused = append(refused, service)
				}
			}
			checkArrivals(t, col, prefix, arrive, refused)
		})
	}
}

// versionRequest is a small, complete profiles request of service: one
// profile of one sample, a count in main.main.
func versionRequest(service string) *collectorpb.ExportProfilesServiceRequest {
	now := uint64(time.Now().UnixNano())
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &profilespb.ProfilesDictionary{
			// Index 0 of every table is the zero value, as OTLP asks.
			StringTable:    []string{"", "samples", "count", "main.main"},
			MappingTable:   []*profilespb.Mapping{{}},
			FunctionTable:  []*profilespb.Function{{}, {NameStrindex: 3}},
			LocationTable:  []*profilespb.Location{{}, {Lines: []*profilespb.Line{{FunctionIndex: 1, Line: 1}}}},
			StackTable:     []*profilespb.Stack{{}, {LocationIndices: []int32{1}}},
			LinkTable:      []*profilespb.Link{{}},
			AttributeTable: []*profilespb.KeyValueAndUnit{{}},
		},
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{
				Key:   "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}},
			}}},
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Scope: &commonpb.InstrumentationScope{Name: tracerID},
				Profiles: []*profilespb.Profile{{
					SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					Samples:      []*profilespb.Sample{{StackIndex: 1, Values: []int64{1}}},
					TimeUnixNano: now - uint64(time.Second),
					DurationNano: uint64(time.Second),
				}},
			}},
		}},
	}
}

// versionLog records the values of the version header on each request an
// exporter put on the wire.
type versionLog struct {
	mu     sync.Mutex
	values [][]string
}

func (l *versionLog) add(values []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.values = append(l.values, slices.Clone(values))
}

func (l *versionLog) all() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.values)
}

// newVersionExporter returns the exporter of protocol, sending to addr in
// plaintext, told to send the version header with the value 2, with no
// retries, and the log of the version header values it actually sent: a
// gRPC interceptor or an HTTP round tripper records them as the request
// leaves.
func newVersionExporter(t *testing.T, p protocol, addr string) (profiler.Exporter, *versionLog) {
	t.Helper()
	log := new(versionLog)
	headers := map[string]string{versionKey: "2"}
	var (
		exp profiler.Exporter
		err error
	)
	switch p {
	case protocolGRPC:
		record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			md, _ := metadata.FromOutgoingContext(ctx)
			log.add(md.Get(versionKey))
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		exp, err = otlpprofilegrpc.New(context.Background(),
			otlpprofilegrpc.WithEndpoint(addr),
			otlpprofilegrpc.WithInsecure(),
			otlpprofilegrpc.WithHeaders(headers),
			otlpprofilegrpc.WithRetry(otlpprofilegrpc.RetryConfig{}),
			otlpprofilegrpc.WithDialOption(grpc.WithUnaryInterceptor(record)))
	default:
		record := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			log.add(r.Header.Values(versionKey))
			return http.DefaultTransport.RoundTrip(r)
		})
		opts := []otlpprofilehttp.Option{
			otlpprofilehttp.WithEndpoint(addr),
			otlpprofilehttp.WithInsecure(),
			otlpprofilehttp.WithHeaders(headers),
			otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{}),
			otlpprofilehttp.WithHTTPClient(&http.Client{Transport: record}),
		}
		if p == protocolHTTPJSON {
			opts = append(opts, otlpprofilehttp.WithJSON())
		}
		exp, err = otlpprofilehttp.New(context.Background(), opts...)
	}
	if err != nil {
		t.Fatalf("%s exporter: %v", p, err)
	}
	t.Cleanup(func() { exp.Shutdown(context.Background()) })
	return exp, log
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// versionAnswer is the Collector's answer to a request: status is a gRPC
// code ("OK" when taken), or an HTTP status line followed, on a refusal,
// by the code of the status in its body; message is the status message.
type versionAnswer struct {
	status, message string
}

func (a versionAnswer) accepted() bool { return a.status == "OK" || a.status == "200 OK" }

func (a versionAnswer) String() string { return fmt.Sprintf("%s %q", a.status, a.message) }

// sendWithVersion sends req to addr over protocol with a plain client,
// version as the values of the version header (nil: none), and returns
// the Collector's answer.
func sendWithVersion(t *testing.T, ctx context.Context, p protocol, addr string, req *collectorpb.ExportProfilesServiceRequest, version []string) versionAnswer {
	t.Helper()
	if p == protocolGRPC {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, v := range version {
			ctx = metadata.AppendToOutgoingContext(ctx, versionKey, v)
		}
		_, err = collectorpb.NewProfilesServiceClient(conn).Export(ctx, req)
		s := status.Convert(err)
		return versionAnswer{s.Code().String(), s.Message()}
	}

	body, contentType := []byte(nil), "application/x-protobuf"
	var err error
	if p == protocolHTTPJSON {
		body, err = protojson.Marshal(req)
		contentType = "application/json"
	} else {
		body, err = proto.Marshal(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1development/profiles", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", contentType)
	for _, v := range version {
		r.Header.Add(versionKey, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("POST %s: %v", r.URL, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return versionAnswer{status: resp.Status}
	}
	// A refusal's body is a google.rpc.Status in the request's encoding.
	s := new(spb.Status)
	if p == protocolHTTPJSON {
		err = protojson.Unmarshal(out, s)
	} else {
		err = proto.Unmarshal(out, s)
	}
	if err != nil {
		return versionAnswer{resp.Status, fmt.Sprintf("undecodable body %q: %v", out, err)}
	}
	return versionAnswer{resp.Status + " " + codes.Code(s.GetCode()).String(), s.GetMessage()}
}

// checkArrivals waits until the Collector's profiles file holds a request
// of each service of arrive, and checks that it holds exactly one of
// each, and none of a service of refused or any other service named with
// prefix.
func checkArrivals(t *testing.T, col *collector, prefix string, arrive, refused []string) {
	t.Helper()
	var seen map[string]int
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, err := readJSONLines(col.ProfilesFile, func() *profilespb.ProfilesData { return new(profilespb.ProfilesData) })
		if err != nil {
			t.Fatal(err)
		}
		seen = make(map[string]int)
		for _, pd := range all {
			if name := serviceName(pd); strings.HasPrefix(name, prefix) {
				seen[name]++
			}
		}
		missing := slices.DeleteFunc(slices.Clone(arrive), func(s string) bool { return seen[s] > 0 })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20s the Collector has written no request of %q; it wrote %v", missing, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range arrive {
		if seen[s] != 1 {
			t.Errorf("%s: %d requests written, want 1", s, seen[s])
		}
		delete(seen, s)
	}
	for _, s := range refused {
		if seen[s] != 0 {
			t.Errorf("%s: refused, yet %d requests written", s, seen[s])
		}
		delete(seen, s)
	}
	if len(seen) > 0 {
		t.Errorf("requests of other services written: %v", seen)
	}
}
