package main

import (
	"fmt"
	"io"
	"slices"
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
)

// report prints the markdown tables: medians and ratios to "none" across
// rounds, the verdict on the throughput target, and every round's
// raw figures.
func report(w io.Writer, p *parent, took time.Duration) {
	base := p.results["none"]
	fmt.Fprintf(w, "%d rounds × %d configurations, %s measured per run after %s warm-up, %d closed-loop workers, live cache %d MB, %d hash rounds per request, profiling period %s, %s; %s; wall time %s.\n\n",
		p.rounds, len(p.names), p.duration, p.warmup, p.workers, p.liveMB, p.hashRounds, p.period, describeRates(), goVersion, took.Round(time.Second))
	fmt.Fprintln(w, "Medians across rounds; ratios are to \"no profiler\" in the same round, median (min–max).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | req/s | × none | p50 ms | p99 ms | p99 × none | CPU µs/req | CPU × none | GC/run | uploads/run | KB uploaded/run |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range p.names {
		rs := p.results[name]
		st, _ := setupByName(name)
		thrRatio, p99Ratio, cpuRatio := "—", "—", "—"
		if base != nil && name != "none" {
			thrRatio = spreadOf(ratios(rs, base, throughput)).ratio()
			p99Ratio = spreadOf(ratios(rs, base, p99)).ratio()
			cpuRatio = spreadOf(ratios(rs, base, cpuPerReq)).ratio()
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %.2f | %.2f | %s | %.1f | %s | %.0f | %.0f | %.0f |\n",
			st.label,
			median(column(rs, throughput)), thrRatio,
			median(column(rs, p50)), median(column(rs, p99)), p99Ratio,
			median(column(rs, cpuPerReq)), cpuRatio,
			median(column(rs, gcs)),
			median(column(rs, func(r runResult) float64 { return float64(r.Uploads) })),
			median(column(rs, func(r runResult) float64 { return r.UploadKB })))
	}
	fmt.Fprintln(w)
	verdict(w, p)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "<details><summary>Every run</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | configuration | req/s | p50 ms | p99 ms | CPU µs/req | GC | GC pause ms | heap MB | uploads | KB | failed |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for round := 1; round <= p.rounds; round++ {
		for _, name := range p.names {
			for _, r := range p.results[name] {
				if r.Round != round {
					continue
				}
				fmt.Fprintf(w, "| %d | %s | %.0f | %.2f | %.2f | %.1f | %d | %.1f | %.0f | %d | %.0f | %d |\n",
					round, name, r.Throughput, ms(r.P50), ms(r.P99), us(r.CPUPerReq), r.GCs,
					float64(r.PauseNs)/1e6, r.HeapMB, r.Uploads, r.UploadKB, r.Errors)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
}

// verdict states whether pprofotel with all five types met the issue's
// target: at least 0.99 × the throughput of no profiler, and more than
// both peers, all as median ratios from this run.
func verdict(w io.Writer, p *parent) {
	base := p.results["none"]
	ours := p.results["pprofotel-all"]
	if base == nil || ours == nil {
		fmt.Fprintln(w, "Target not evaluated: the run needs both \"none\" and \"pprofotel-all\".")
		return
	}
	r := median(ratios(ours, base, throughput))
	met := r >= 0.99
	fmt.Fprintf(w, "Target: pprofotel with all five types ≥ 0.99 × no profiler: %.3f × — %s", r, metText(met, r-0.99))
	for _, peer := range []string{"pyroscope", "datadog"} {
		rs := p.results[peer]
		if rs == nil {
			continue
		}
		pr := median(ratios(rs, base, throughput))
		better := r > pr
		met = met && better
		fmt.Fprintf(w, "; better than %s (%.3f ×): %s", peer, pr, yesNo(better))
	}
	fmt.Fprintf(w, ". Overall: %s.\n", map[bool]string{true: "met", false: "not met"}[met])
	if sp := spreadOf(ratios(ours, base, throughput)); sp.hi-sp.lo > 0.02 {
		fmt.Fprintf(w, "\nInconclusive on this run: pprofotel-all's throughput ratio spread over %.3f–%.3f across rounds, wider than the 0.01 the target must resolve; read the CPU-per-request ratios and perf.sh instead.\n", sp.lo, sp.hi)
	}
}

func metText(met bool, margin float64) string {
	if met {
		return fmt.Sprintf("met (by %+.3f)", margin)
	}
	return fmt.Sprintf("missed by %.3f", -margin)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
