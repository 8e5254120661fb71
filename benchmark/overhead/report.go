package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// percentile returns the q-quantile (0 < q ≤ 1) of sorted latencies by
// the nearest-rank method, or 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spread is the median, minimum and maximum of a series of per-round
// values.
type spread struct{ med, lo, hi float64 }

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	return spread{median(xs), slices.Min(xs), slices.Max(xs)}
}

func (s spread) ratio() string { return fmt.Sprintf("%.3f (%.3f–%.3f)", s.med, s.lo, s.hi) }

// ratios divides metric(results[name][i]) by metric(base[i]) round by
// round, so that a slow round for everyone cancels out.
func ratios(rs, base []runResult, metric func(runResult) float64) []float64 {
	var out []float64
	for i := range min(len(rs), len(base)) {
		if b := metric(base[i]); b != 0 {
			out = append(out, metric(rs[i])/b)
		}
	}
	return out
}

func column(rs []runResult, metric func(runResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = metric(r)
	}
	return out
}

var (
	throughput = func(r runResult) float64 { return r.Throughput }
	p50        = func(r runResult) float64 { return ms(r.P50) }
	p99        = func(r runResult) float64 { return ms(r.P99) }
	cpuPerReq  = func(r runResult) float64 { return us(r.CPUPerReq) }
	gcs        = func(r runResult) float64 { return float64(r.GCs) }
	liveMB     = func(r runResult) float64 { return r.LiveMB }
)

// report prints the markdown tables: medians and ratios to "none" across
// rounds, the verdict on the throughput target, and every round's
// raw figures.
func report(w io.Writer, p *parent, took time.Duration) {
	base, floor := p.results["none"], p.results["floor"]
	service := fmt.Sprintf("HTTP service, %d closed-loop workers", p.workers)
	if p.service == "cpu" {
		service = fmt.Sprintf("CPU-bound service, %d goroutines (ops are theirs, p50/p99 do not apply)", cpuBusyGoroutines)
	}
	fmt.Fprintf(w, "%s; %d rounds × %d configurations, %s measured per run after %s warm-up, live cache %d MB, %d hash rounds per op, profiling period %s, %s; %s; wall time %s.\n\n",
		service, p.rounds, len(p.names), p.duration, p.warmup, p.liveMB, p.hashRounds, p.period, describeRates(), goVersion, took.Round(time.Second))
	fmt.Fprintln(w, "Medians across rounds; ratios are to \"no profiler\" and to the floor (the runtime's CPU profiler alone) in the same round, median (min–max). An op is a request (HTTP) or one hash-and-allocate step (CPU-bound).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | ops/s | × none | p50 ms | p99 ms | p99 × none | CPU µs/op | CPU × none | CPU × floor | GC/run | peak live MB | uploads/run | KB uploaded/run |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range p.names {
		rs := p.results[name]
		st := labelOf(name)
		thrRatio, p99Ratio, cpuRatio, floorRatio := "—", "—", "—", "—"
		if base != nil && name != "none" {
			thrRatio = spreadOf(ratios(rs, base, throughput)).ratio()
			if p.service != "cpu" {
				p99Ratio = spreadOf(ratios(rs, base, p99)).ratio()
			}
			cpuRatio = spreadOf(ratios(rs, base, cpuPerReq)).ratio()
		}
		if floor != nil && name != "floor" && name != "none" {
			floorRatio = spreadOf(ratios(rs, floor, cpuPerReq)).ratio()
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.2f | %.2f | %s | %.1f | %s | %s | %.0f | %.1f | %.0f | %.0f |\n",
			st,
			median(column(rs, throughput)), thrRatio,
			median(column(rs, p50)), median(column(rs, p99)), p99Ratio,
			median(column(rs, cpuPerReq)), cpuRatio, floorRatio,
			median(column(rs, gcs)),
			median(column(rs, func(r runResult) float64 { return r.LiveMB })),
			median(column(rs, func(r runResult) float64 { return float64(r.Uploads) })),
			median(column(rs, func(r runResult) float64 { return r.UploadKB })))
	}
	fmt.Fprintln(w)
	verdict(w, p)
	againstBaseline(w, p)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "<details><summary>Every run</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | configuration | ops/s | p50 ms | p99 ms | CPU µs/op | GC | GC pause ms | peak live MB | uploads | KB | failed |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for round := 1; round <= p.rounds; round++ {
		for _, name := range p.names {
			for _, r := range p.results[name] {
				if r.Round != round {
					continue
				}
				fmt.Fprintf(w, "| %d | %s | %.0f | %.2f | %.2f | %.1f | %d | %.1f | %.1f | %d | %.0f | %d |\n",
					round, name, r.Throughput, ms(r.P50), ms(r.P99), us(r.CPUPerReq), r.GCs,
					float64(r.PauseNs)/1e6, r.LiveMB, r.Uploads, r.UploadKB, r.Errors)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
}

// verdict states, from this run's median CPU-time ratios, whether issue
// 18's targets were met: pprofotel at the default duty cycle costs no more
// CPU over no profiler than dd-trace-go at its defaults, and pprofotel
// profiling CPU continuously stays within 2 % of the floor, the runtime's
// CPU profiler alone.
func verdict(w io.Writer, p *parent) {
	base, floor := p.results["none"], p.results["floor"]
	dd, cont := p.results["datadog-default"], p.results["pprofotel-continuous"]
	for _, name := range []string{"pprofotel", "pprofotel-duty"} {
		duty := p.results[name]
		if base == nil || duty == nil || dd == nil {
			continue
		}
		st, _ := setupByName(name)
		ours, theirs := spreadOf(ratios(duty, base, cpuPerReq)), spreadOf(ratios(dd, base, cpuPerReq))
		fmt.Fprintf(w, "Target: %s, CPU over no profiler ≤ dd-trace-go's at its defaults: %.3f × against %.3f × — %s.", st.label, ours.med, theirs.med, metWord(ours.med <= theirs.med))
		if overlap(ours, theirs) {
			fmt.Fprintf(w, " The per-round ranges overlap (%.3f–%.3f, %.3f–%.3f): within this machine's noise.", ours.lo, ours.hi, theirs.lo, theirs.hi)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w)
	}
	if floor != nil && cont != nil {
		r := spreadOf(ratios(cont, floor, cpuPerReq))
		fmt.Fprintf(w, "Target: pprofotel continuous, CPU ≤ 1.02 × the floor: %.3f × (%.3f–%.3f) — %s.\n", r.med, r.lo, r.hi, metWord(r.med <= 1.02))
	}
}

// againstBaseline prints, for every configuration run both in this build
// and in the -baseline one, this build's CPU per op, throughput and peak
// live heap over the baseline's, round by round: what the SDK's changes
// since the baseline cost the same service under the same profiler.
func againstBaseline(w io.Writer, p *parent) {
	for _, name := range p.names {
		base := p.results[basePrefix+name]
		if strings.HasPrefix(name, basePrefix) || base == nil {
			continue
		}
		rs := p.results[name]
		cpu := ratios(rs, base, cpuPerReq)
		fmt.Fprintf(w, "%s over the -baseline SDK, per round: CPU per op %s (median %.3f), throughput %s, peak live MB %+.1f (medians %.1f and %.1f).\n\n",
			name, formatRatios(cpu), median(cpu), spreadOf(ratios(rs, base, throughput)).ratio(),
			median(column(rs, liveMB))-median(column(base, liveMB)), median(column(rs, liveMB)), median(column(base, liveMB)))
	}
}

func formatRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, ", ")
}

// labelOf is the table's label of configuration name, run in the
// -baseline build when it says base:.
func labelOf(name string) string {
	st, _ := setupByName(strings.TrimPrefix(name, basePrefix))
	if strings.HasPrefix(name, basePrefix) {
		return st.label + ", SDK of -baseline"
	}
	return st.label
}

// overlap reports whether two per-round ranges overlap.
func overlap(a, b spread) bool { return a.lo <= b.hi && b.lo <= a.hi }

func metWord(met bool) string {
	if met {
		return "met"
	}
	return "not met"
}
