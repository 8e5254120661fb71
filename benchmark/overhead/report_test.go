package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"median of even is the lower middle", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 1..100", hundred, 0.99, 99 * time.Millisecond},
		{"p50 of 1..100", hundred, 0.50, 50 * time.Millisecond},
		{"p100 is the maximum", hundred, 1, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func TestMedianAndRatios(t *testing.T) {
	tests := []struct {
		name       string
		rs, base   []float64
		wantRatios []float64
		wantMedian float64
	}{
		{"odd", []float64{90, 200, 50}, []float64{100, 200, 100}, []float64{0.9, 1, 0.5}, 0.9},
		{"even", []float64{90, 210}, []float64{100, 200}, []float64{0.9, 1.05}, 0.975},
		{"zero base skipped", []float64{90, 5}, []float64{100, 0}, []float64{0.9}, 0.9},
		{"shorter base", []float64{90, 5, 7}, []float64{100}, []float64{0.9}, 0.9},
	}
	toRuns := func(xs []float64) []runResult {
		out := make([]runResult, len(xs))
		for i, x := range xs {
			out[i] = runResult{Throughput: x}
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ratios(toRuns(tt.rs), toRuns(tt.base), throughput)
			if len(got) != len(tt.wantRatios) {
				t.Fatalf("ratios = %v, want %v", got, tt.wantRatios)
			}
			for i := range got {
				if diff := got[i] - tt.wantRatios[i]; diff > 1e-12 || diff < -1e-12 {
					t.Fatalf("ratios = %v, want %v", got, tt.wantRatios)
				}
			}
			if m := median(got); m-tt.wantMedian > 1e-12 || tt.wantMedian-m > 1e-12 {
				t.Errorf("median(%v) = %v, want %v", got, m, tt.wantMedian)
			}
		})
	}
}

func TestServiceWork(t *testing.T) {
	svc := newService(1, 1, 2)
	tests := []struct {
		url      string
		status   int
		contains string
	}{
		{"/work?k=3&n=1", http.StatusOK, `"name":"record-3"`},
		{"/work?k=3&n=8", http.StatusOK, `"pooled":`}, // replace + pool
		{"/work?k=5&n=4", http.StatusOK, `"pooled":`},
		{"/work?k=-1&n=1", http.StatusBadRequest, "want /work"},
		{"/work?k=x&n=1", http.StatusBadRequest, "want /work"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			rec := httptest.NewRecorder()
			svc.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.url, nil))
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.contains) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tt.url, rec.Code, rec.Body.String(), tt.status, tt.contains)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	cpu := func(us ...float64) []runResult {
		out := make([]runResult, len(us))
		for i, u := range us {
			out[i] = runResult{Round: i + 1, CPUPerReq: time.Duration(u * float64(time.Microsecond))}
		}
		return out
	}
	p := &parent{results: map[string][]runResult{
		"none":                 cpu(100, 100, 100),
		"floor":                cpu(110, 110, 110),
		"pprofotel-continuous": cpu(111, 111, 111), // 1.009 × the floor
		"pprofotel":            cpu(102, 101, 102), // 1.02 × none
		"pprofotel-duty":       cpu(106, 104, 105), // 1.05 × none
		"datadog-default":      cpu(103, 103, 103), // 1.03 × none
	}}
	var b strings.Builder
	verdict(&b, p)
	for _, want := range []string{
		"pprofotel, defaults (cpu, heap, goroutine; CPU a sixth of each window), CPU over no profiler ≤ dd-trace-go's at its defaults: 1.020 × against 1.030 × — met.",
		"default duty cycle (CPU a sixth of each window), CPU over no profiler ≤ dd-trace-go's at its defaults: 1.050 × against 1.030 × — not met.",
		"pprofotel continuous, CPU ≤ 1.02 × the floor: 1.009 × (1.009–1.009) — met.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "overlap") {
		t.Errorf("disjoint ranges reported as overlapping:\n%s", b.String())
	}
}

func TestAgainstBaseline(t *testing.T) {
	runs := func(liveMB float64, us ...float64) []runResult {
		out := make([]runResult, len(us))
		for i, u := range us {
			out[i] = runResult{Round: i + 1, Throughput: 1000, LiveMB: liveMB, CPUPerReq: time.Duration(u * float64(time.Microsecond))}
		}
		return out
	}
	p := &parent{
		names: []string{"spans", "base:pprofotel-cpu-offcpu-spans", "pprofotel-cpu-offcpu-spans"},
		results: map[string][]runResult{
			"spans":                           runs(60, 100, 100, 100),
			"base:pprofotel-cpu-offcpu-spans": runs(70, 100, 110, 120),
			"pprofotel-cpu-offcpu-spans":      runs(72.5, 101, 110, 126),
		},
	}
	var b strings.Builder
	againstBaseline(&b, p)
	want := "pprofotel-cpu-offcpu-spans over the -baseline SDK, per round: CPU per op 1.010, 1.000, 1.050 (median 1.010), throughput 1.000 (1.000–1.000), peak live MB +2.5 (medians 72.5 and 70.0).\n\n"
	if b.String() != want {
		t.Errorf("againstBaseline printed\n%q\nwant\n%q", b.String(), want)
	}
	if got := labelOf("base:pprofotel-cpu-offcpu-spans"); got != "pprofotel cpu,offcpu (default duty cycles), traced service, SDK of -baseline" {
		t.Errorf("labelOf(base:...) = %q", got)
	}
}
