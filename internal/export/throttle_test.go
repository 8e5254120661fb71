package export_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pprofotel/profiler/internal/deliver"
	"github.com/pprofotel/profiler/internal/export"
)

// arrivals records when a throttling server received each request.
type arrivals struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *arrivals) add() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
}

func (a *arrivals) get() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.times...)
}

// throttlingGRPC answers every call RESOURCE_EXHAUSTED with a RetryInfo.
type throttlingGRPC struct {
	collectorpb.UnimplementedProfilesServiceServer
	delay time.Duration
	got   *arrivals
}

func (s *throttlingGRPC) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	s.got.add()
	st, err := status.New(codes.ResourceExhausted, "slow down").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(s.delay)})
	if err != nil {
		return nil, err
	}
	return nil, st.Err()
}

// TestThrottlingHoldsForEveryWindow sends a window every period through the
// Sender and the retry policy, for several times the delay a throttling
// server asks for in every answer (HTTP Retry-After, gRPC RetryInfo) and
// which is longer than the policy's MaxElapsedTime, so that no Export
// waits it out by retrying: the server must see no two requests closer
// than its delay, and the windows that pile up meanwhile are dropped
// oldest first and counted.
func TestThrottlingHoldsForEveryWindow(t *testing.T) {
	const period = 20 * time.Millisecond
	tests := []struct {
		protocol string
		delay    time.Duration
		start    func(t *testing.T, got *arrivals, delay time.Duration) string
	}{
		{export.ProtocolHTTPProtobuf, time.Second, func(t *testing.T, got *arrivals, delay time.Duration) string {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.add()
				w.Header().Set("Retry-After", "1") // delay, in whole seconds
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			t.Cleanup(ts.Close)
			return ts.URL + "/v1development/profiles"
		}},
		{export.ProtocolGRPC, 300 * time.Millisecond, func(t *testing.T, got *arrivals, delay time.Duration) string {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := grpc.NewServer()
			collectorpb.RegisterProfilesServiceServer(srv, &throttlingGRPC{delay: delay, got: got})
			go func() { _ = srv.Serve(lis) }()
			t.Cleanup(srv.Stop)
			return lis.Addr().String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			got := new(arrivals)
			endpoint := tt.start(t, got, tt.delay)
			exp, err := export.NewOTLP(export.OTLPConfig{Protocol: tt.protocol, Endpoint: endpoint, Insecure: true, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			retrying := export.WithRetry(exp, export.RetryConfig{
				Enabled: true, InitialInterval: period, MaxInterval: period, MaxElapsedTime: tt.delay / 4,
			})
			var stats deliver.Outcomes
			s := deliver.New(deliver.Config{
				Exporter: retrying, MaxWindows: 3, Outcomes: &stats,
			})
			periods := 3
			enqueued := 0
			end := time.Now().Add(time.Duration(periods)*tt.delay + tt.delay/2)
			for now := time.Now(); now.Before(end); now = time.Now() {
				s.Enqueue(deliver.Window{
					Start: now.Add(-period), End: now,
					Request: &collectorpb.ExportProfilesServiceRequest{Dictionary: &profilespb.ProfilesDictionary{StringTable: []string{""}}},
				})
				enqueued++
				time.Sleep(period)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_ = s.Shutdown(ctx)
			cancel()

			times := got.get()
			if len(times) < 2 || len(times) > periods+1 {
				t.Errorf("server got %d requests over %d periods of its %v delay (%d windows enqueued), want 2 to %d",
					len(times), periods, tt.delay, enqueued, periods+1)
			}
			for i := 1; i < len(times); i++ {
				if gap := times[i].Sub(times[i-1]); gap < tt.delay {
					t.Errorf("requests %d and %d came %v apart, within the server's delay of %v", i, i+1, gap, tt.delay)
				}
			}
			if stats.Dropped.Load() == 0 {
				t.Error("no window dropped: the queue should have overflowed while the exporter held")
			}
			queued, _ := s.Len()
			if sum := stats.Exported.Load() + stats.Failed.Load() + stats.Dropped.Load() + int64(queued); sum != int64(enqueued) {
				t.Errorf("exported %d + failed %d + dropped %d + queued %d = %d, want the %d enqueued",
					stats.Exported.Load(), stats.Failed.Load(), stats.Dropped.Load(), queued, sum, enqueued)
			}
		})
	}
}
