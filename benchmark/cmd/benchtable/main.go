// Command benchtable reads `go test -bench` output of this module's
// BenchmarkSourceSize, BenchmarkWindow and BenchmarkRetained from standard
// input, possibly several rounds of it, and prints the Markdown tables of
// benchmark/README.md: medians over the rounds, and the ratios the targets
// of the performance issue are stated in.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results maps a benchmark name without the -GOMAXPROCS suffix to its
// metrics by unit, one value per round.
type results map[string]map[string][]float64

var procs = regexp.MustCompile(`-\d+$`)

func parse(sc *bufio.Scanner) results {
	r := make(results)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if r[name] == nil {
			r[name] = make(map[string][]float64)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			r[name][f[i+1]] = append(r[name][f[i+1]], v)
		}
	}
	return r
}

func (r results) get(name, unit string) float64 {
	vs := slices.Clone(r[name][unit])
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// each returns the values of unit in each round, in order.
func (r results) each(name, unit string) string {
	var out []string
	for _, v := range r[name][unit] {
		out = append(out, fmt.Sprintf("%.3f", v))
	}
	return strings.Join(out, ", ")
}

func ms(ns float64) string { return fmt.Sprintf("%.1f", ns/1e6) }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", a/b)
}

func main() {
	r := parse(bufio.NewScanner(os.Stdin))

	fmt.Println("### Source (the generated runtime state, as the runtime writes it)")
	fmt.Println()
	fmt.Println("| profile | gzipped bytes | raw bytes | samples | generated stacks | locations | functions |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, k := range []string{"heap", "mutex", "block"} {
		n := "SourceSize/" + k
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", k,
			r.get(n, "gz-B"), r.get(n, "raw-B"), r.get(n, "samples"), r.get(n, "gen-stacks"), r.get(n, "locations"), r.get(n, "functions"))
	}

	fmt.Println()
	fmt.Println("### Time and allocations per window (medians)")
	fmt.Println()
	fmt.Println("Separate runs, minutes apart within a round:")
	fmt.Println()
	fmt.Println("| input | runtime write ms | ours ms | naive ms | godeltaprof ms | godeltaprof ÷ write | (write + ours) ÷ godeltaprof |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	kinds := []string{"heap", "mutex", "block", "all"}
	for _, k := range kinds {
		w, o, n, g := r.get("Window/"+k+"/write", "ns/op"), r.get("Window/"+k+"/ours", "ns/op"), r.get("Window/"+k+"/naive", "ns/op"), r.get("Window/"+k+"/godeltaprof", "ns/op")
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", k, ms(w), ms(o), ms(n), ms(g), ratio(g, w), ratio(w+o, g))
	}
	fmt.Println()
	fmt.Println("Paired runs, where two variants alternate window by window under the same machine conditions. write-ours: the runtime writes the live state and ours processes exactly that output, in each window. paired: ours and naive alternate on the same recorded windows. Medians, then each round:")
	fmt.Println()
	fmt.Println("| input | write ms | ours ms | ours ÷ write | (write + ours) ÷ write | each round | ours ms | naive ms | ours ÷ naive | each round | separate runs: ours ÷ same-input write, ours ÷ naive |")
	fmt.Println("|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|")
	for _, k := range kinds {
		wn, pn := "Window/"+k+"/write-ours", "Window/"+k+"/paired"
		ow := r.get(wn, "ours/write")
		w, o := r.get("Window/"+k+"/ours", "input-write-ns/op"), r.get("Window/"+k+"/ours", "ns/op")
		fmt.Printf("| %s | %s | %s | %.3f | %.3f | %s | %s | %s | %.3f | %s | %s, %s |\n", k,
			ms(r.get(wn, "write-ns/op")), ms(r.get(wn, "ours-ns/op")), ow, 1+ow, r.each(wn, "ours/write"),
			ms(r.get(pn, "ours-ns/op")), ms(r.get(pn, "naive-ns/op")), r.get(pn, "ours/naive"), r.each(pn, "ours/naive"),
			ratio(o, w), ratio(o, r.get("Window/"+k+"/naive", "ns/op")))
	}
	fmt.Println()
	fmt.Println("| input | write allocs | ours allocs | ours B | naive allocs | naive B | ours ÷ naive allocs | godeltaprof allocs |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range kinds {
		wa, oa, ob := r.get("Window/"+k+"/write", "allocs/op"), r.get("Window/"+k+"/ours", "allocs/op"), r.get("Window/"+k+"/ours", "B/op")
		na, nb, ga := r.get("Window/"+k+"/naive", "allocs/op"), r.get("Window/"+k+"/naive", "B/op"), r.get("Window/"+k+"/godeltaprof", "allocs/op")
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.0f |\n", k, wa, oa, ob, na, nb, ratio(oa, na), ga)
	}

	fmt.Println()
	fmt.Println("### Wire size per window (gzipped bytes)")
	fmt.Println()
	fmt.Println("| input | runtime pprof (sum) | ours: OTLP request | ours ÷ runtime | naive: OTLP request | godeltaprof pprof (sum) | ours ÷ godeltaprof |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, k := range kinds {
		in, o := r.get("Window/"+k+"/ours", "pprof-gz-B"), r.get("Window/"+k+"/ours", "otlp-gz-B")
		n, g := r.get("Window/"+k+"/naive", "otlp-gz-B"), r.get("Window/"+k+"/godeltaprof", "pprof-gz-B")
		fmt.Printf("| %s | %.0f | %.0f | %s | %.0f | %.0f | %s |\n", k, in, o, ratio(o, in), n, g, ratio(o, g))
	}

	retained := false
	for _, input := range []string{"stable", "growing"} {
		name := "Retained/input=" + input
		if _, ok := r[name]; !ok {
			continue
		}
		if !retained {
			retained = true
			fmt.Println()
			fmt.Println("### Retained memory, 1,000 windows of the heap profile")
			fmt.Println()
			fmt.Println("| input | retained at window 100 | retained at window 1,000 | growth 100 → 1,000 | highest − lowest of windows 100, 200 … 1,000 | MemStats.BuckHashSys | retained ÷ BuckHashSys | heap input gz B at 100 → 1,000 | samples sent at 100 → 1,000 |")
			fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		}
		fmt.Printf("| %s | %.0f B | %.0f B | %.0f B (%.2f %%) | %.0f B | %.0f B | %.2f | %.0f → %.0f | %.0f → %.0f |\n", input,
			r.get(name, "retained-B@100"), r.get(name, "retained-B@1000"),
			r.get(name, "growth-B"), 100*r.get(name, "growth-B")/r.get(name, "retained-B@100"),
			r.get(name, "range-B"),
			r.get(name, "BuckHashSys-B"), r.get(name, "retained/BuckHashSys"),
			r.get(name, "input-gz-B@100"), r.get(name, "input-gz-B@1000"),
			r.get(name, "samples@100"), r.get(name, "samples@1000"))
	}
}
