package otlptest

import (
	"fmt"
	"slices"
	"strings"

	pprofprofile "github.com/google/pprof/profile"
)

// StackTotals sums the values of sample type sampleIndex of p per sample
// identity. The key lists the frames leaf first, inlined frames included, as
// "function:line" joined by ";", then "|" and the sorted string labels,
// "key=value" joined by ",". Numeric labels are left out of the key, as the
// Builder sends none (package otlp): a runtime profile's samples that differ
// only in them add up under one key. A location without lines shows as its
// hex address. Keys
// whose total is zero are left out, so that a profile compares equal to a
// copy that dropped its zero-valued samples.
func StackTotals(p *pprofprofile.Profile, sampleIndex int) map[string]int64 {
	totals := make(map[string]int64)
	var b strings.Builder
	var lbls []string
	for _, s := range p.Sample {
		if sampleIndex < 0 || sampleIndex >= len(s.Value) {
			continue
		}
		b.Reset()
		first := true
		for _, loc := range s.Location {
			if len(loc.Line) == 0 {
				if !first {
					b.WriteByte(';')
				}
				fmt.Fprintf(&b, "%#x", loc.Address)
				first = false
			}
			for _, ln := range loc.Line {
				if !first {
					b.WriteByte(';')
				}
				name := ""
				if ln.Function != nil {
					name = ln.Function.Name
				}
				fmt.Fprintf(&b, "%s:%d", name, ln.Line)
				first = false
			}
		}
		lbls = lbls[:0]
		for k, vs := range s.Label {
			for _, v := range vs {
				lbls = append(lbls, k+"="+v)
			}
		}
		slices.Sort(lbls)
		b.WriteByte('|')
		b.WriteString(strings.Join(lbls, ","))
		totals[b.String()] += s.Value[sampleIndex]
	}
	for k, v := range totals {
		if v == 0 {
			delete(totals, k)
		}
	}
	return totals
}
