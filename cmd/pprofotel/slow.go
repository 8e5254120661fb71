package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	pprof "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/labels"
)

// The slow-request profile, as the off-CPU recorder sends it
// (docs/slow-requests.md): its name (collect.SlowRequests), its sample
// type and its attributes.
const (
	slowProfile    = "slowrequests"
	slowSampleType = "wall"
	stateLabel     = otlpattr.GoroutineState
	reasonLabel    = otlpattr.WaitReason
	beforeLabel    = otlpattr.BeforeTrace
	routeLabel     = requests.RouteKey
)

func runSlow(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pprofotel slow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 10, "how many requests to list, the slowest first")
	top := fs.Int("top", 3, "how many parts of each request's time to list, the largest first")
	sel := selection{profiles: slowProfile}
	sel.register(fs, false)
	profiles, err := sel.convert(fs, "usage: pprofotel slow [flags] PATH...\n\nLists the slowest requests of the selected windows and where their time went.\n\n", args, stdin, stderr)
	if err != nil {
		return err
	}
	if *n < 1 || *top < 1 {
		return errors.New("-n and -top must be at least 1")
	}
	reqs, err := slowRequests(profiles[slowProfile])
	if err != nil {
		return err
	}
	writeSlow(stdout, reqs, *n, *top)
	return nil
}

// slowRequest is one request of the slow-request profile: its span, its
// route, its duration (the sum of its samples) and where it went.
type slowRequest struct {
	traceID, spanID, route string
	dur                    int64
	parts                  []slowPart
	// index maps a part's key to its place in parts while samples are
	// gathered.
	index map[partKey]int
}

// partKey is what tells the parts of a request apart.
type partKey struct{ state, reason, fn, call string }

// slowPart is the time a request spent in one state, for one reason, in
// one function of the application; before is the part of it before the
// trace began.
type slowPart struct {
	state, reason string
	// fn is the innermost function outside the standard library, and
	// call the standard-library function it called to wait, if any.
	fn, call    string
	dur, before int64
}

// slowRequests gathers the requests of p, the slowest first.
func slowRequests(p *pprof.Profile) ([]slowRequest, error) {
	if p == nil {
		return nil, fmt.Errorf("the selected windows hold no %s profile: it comes with the offcpu profile, for requests that ran longer than the slow-request threshold", slowProfile)
	}
	vi := slices.IndexFunc(p.SampleType, func(t *pprof.ValueType) bool { return t.Type == slowSampleType })
	if vi < 0 {
		return nil, fmt.Errorf("the %s profile has no %s sample type", slowProfile, slowSampleType)
	}
	byID := map[string]*slowRequest{}
	var order []*slowRequest
	for _, s := range p.Sample {
		traceID, spanID := first(s.Label[labels.TraceIDKey]), first(s.Label[labels.SpanIDKey])
		if traceID == "" || spanID == "" {
			continue
		}
		r := byID[traceID+spanID]
		if r == nil {
			r = &slowRequest{traceID: traceID, spanID: spanID, index: map[partKey]int{}}
			byID[traceID+spanID] = r
			order = append(order, r)
		}
		if e := first(s.Label[routeLabel]); e != "" {
			r.route = e
		}
		v := s.Value[vi]
		r.dur += v
		fn, call := appFrame(s)
		key := partKey{state: first(s.Label[stateLabel]), reason: first(s.Label[reasonLabel]), fn: fn, call: call}
		i, ok := r.index[key]
		if !ok {
			i = len(r.parts)
			r.index[key] = i
			r.parts = append(r.parts, slowPart{state: key.state, reason: key.reason, fn: fn, call: call})
		}
		r.parts[i].dur += v
		if first(s.Label[beforeLabel]) == "true" {
			r.parts[i].before += v
		}
	}
	out := make([]slowRequest, len(order))
	for i, r := range order {
		slices.SortStableFunc(r.parts, func(a, b slowPart) int { return cmp.Compare(b.dur, a.dur) })
		r.index = nil
		out[i] = *r
	}
	slices.SortStableFunc(out, func(a, b slowRequest) int {
		if c := cmp.Compare(b.dur, a.dur); c != 0 {
			return c
		}
		return cmp.Compare(a.traceID+a.spanID, b.traceID+b.spanID)
	})
	return out, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// appFrame returns the innermost function of s's stack outside the
// standard library, and the standard-library function it called, if any:
// where in the application the time went, and on what it waited.
func appFrame(s *pprof.Sample) (fn, call string) {
	var last string
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			if !standard(name) {
				return name, last
			}
			last = name
		}
	}
	return last, ""
}

// standard reports whether function name is the standard library's: the
// first element of its package path has no dot, and is not main.
func standard(name string) bool {
	pkg := name
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[:i]
	} else if i := strings.IndexByte(pkg, '.'); i >= 0 {
		pkg = pkg[:i]
	}
	elem, _, _ := strings.Cut(pkg, "/")
	return elem != "main" && !strings.Contains(elem, ".")
}

// writeSlow lists the n slowest requests, each with its top largest parts.
func writeSlow(w io.Writer, reqs []slowRequest, n, top int) {
	fmt.Fprintf(w, "%d slow requests in the selected windows", len(reqs))
	if len(reqs) > n {
		fmt.Fprintf(w, "; showing the slowest %d", n)
	}
	fmt.Fprintln(w)
	for _, r := range reqs[:min(n, len(reqs))] {
		route := r.route
		if route == "" {
			route = "-"
		}
		fmt.Fprintf(w, "\n%v  %s  trace %s span %s\n", time.Duration(r.dur).Round(time.Microsecond), route, r.traceID, r.spanID)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, p := range r.parts[:min(top, len(r.parts))] {
			what := p.state
			if p.reason != "" {
				what += " " + p.reason
			}
			where := p.fn
			if p.call != "" {
				where += " (" + p.call + ")"
			}
			note := ""
			if p.before > 0 {
				note = fmt.Sprintf("%v of it before the trace began", time.Duration(p.before).Round(time.Microsecond))
			}
			share := 0.0
			if r.dur > 0 {
				share = 100 * float64(p.dur) / float64(r.dur)
			}
			fmt.Fprintf(tw, "  %.1f%%\t%v\t%s\t%s", share, time.Duration(p.dur).Round(time.Microsecond), what, where)
			if note != "" {
				fmt.Fprintf(tw, "\t%s", note)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
}
