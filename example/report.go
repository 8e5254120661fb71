package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	gpprof "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler/pprofconv"
)

// The pprof labels and profiles the report reads, as pprofconv writes them
// (docs/what-is-sent.md, docs/slow-requests.md).
const (
	routeLabel   = "route"
	traceIDLabel = "trace_id"
	spanIDLabel  = "span_id"
	stateLabel   = "goroutine_state"
	reasonLabel  = "wait_reason"
	slowProfile  = "slowrequests"
	noRoute      = "(no request)"
)

// writeReport reads back the window files of dir whose names are not in
// before, this run's, merged, and writes what they hold by route and
// where the slowest request's time went.
func writeReport(w io.Writer, dir string, before map[string]bool) error {
	var reqs []pprofconv.Request
	for name := range windowFiles(dir) {
		if before[name] {
			continue
		}
		r, err := pprofconv.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		reqs = append(reqs, r...)
	}
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		return err
	}
	writeRoutes(w, profiles)
	writeSlowest(w, profiles[slowProfile])
	return nil
}

// routeRow is what the run's profiles hold of one route.
type routeRow struct {
	route    string
	requests int64
	cpu      int64 // nanoseconds
	offCPU   int64 // goroutine-nanoseconds
}

// writeRoutes writes the requests, CPU time and off-CPU time of each
// route, the samples of no request apart.
func writeRoutes(w io.Writer, profiles map[string]*gpprof.Profile) {
	rows := map[string]*routeRow{}
	add := func(p *gpprof.Profile, sampleType string, field func(*routeRow) *int64) {
		if p == nil {
			return
		}
		i := slices.IndexFunc(p.SampleType, func(t *gpprof.ValueType) bool { return t.Type == sampleType })
		if i < 0 {
			return
		}
		for _, s := range p.Sample {
			e := first(s.Label[routeLabel])
			if e == "" {
				e = noRoute
			}
			if rows[e] == nil {
				rows[e] = &routeRow{route: e}
			}
			*field(rows[e]) += s.Value[i]
		}
	}
	add(profiles["requests"], "requests", func(r *routeRow) *int64 { return &r.requests })
	add(profiles["cpu"], "cpu", func(r *routeRow) *int64 { return &r.cpu })
	add(profiles["offcpu"], "off_cpu", func(r *routeRow) *int64 { return &r.offCPU })
	sorted := slices.SortedFunc(func(yield func(*routeRow) bool) {
		for _, r := range rows {
			if !yield(r) {
				return
			}
		}
	}, func(a, b *routeRow) int {
		if (a.route == noRoute) != (b.route == noRoute) {
			if a.route == noRoute {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.requests, a.requests), cmp.Compare(a.route, b.route))
	})

	width := len("route")
	for _, r := range sorted {
		width = max(width, len(r.route))
	}
	offCPU := profiles["offcpu"] != nil
	fmt.Fprintln(w, "\nthis run by route, the http.route of the request's server span, read back from its windows:")
	header := fmt.Sprintf("  %-*s  %8s  %8s", width, "route", "requests", "CPU time")
	if offCPU {
		header += "  off-CPU time (goroutine-seconds)"
	}
	fmt.Fprintln(w, header)
	for _, r := range sorted {
		requests := fmt.Sprint(r.requests)
		if r.route == noRoute {
			requests = "-"
		}
		line := fmt.Sprintf("  %-*s  %8s  %6.2f s", width, r.route, requests, time.Duration(r.cpu).Seconds())
		if offCPU {
			line += fmt.Sprintf("  %12.1f", time.Duration(r.offCPU).Seconds())
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  %s is the time outside any server span: the load's clients, the runtime, the profiler\n", noRoute)
}

// slowPart is the time a request spent in one state, for one reason, at
// one place.
type slowPart struct {
	what, where string
	dur         int64
}

// slowRequest is a request of the slow-request profile: its route,
// its duration, the time no trace covered, and its parts.
type slowRequest struct {
	id, route     string
	dur, untraced int64
	parts         map[slowPart]int64
}

// slowRequests gathers the requests of p, the slow-request profile, by
// span.
func slowRequests(p *gpprof.Profile) map[string]*slowRequest {
	byID := map[string]*slowRequest{}
	for _, s := range p.Sample {
		id := "trace " + first(s.Label[traceIDLabel]) + " span " + first(s.Label[spanIDLabel])
		r := byID[id]
		if r == nil {
			r = &slowRequest{id: id, parts: map[slowPart]int64{}}
			byID[id] = r
		}
		r.route = cmp.Or(r.route, first(s.Label[routeLabel]))
		state := first(s.Label[stateLabel])
		r.dur += s.Value[0]
		if state == "untraced" {
			r.untraced += s.Value[0]
		}
		what := strings.TrimSpace(state + " " + first(s.Label[reasonLabel]))
		r.parts[slowPart{what: what, where: appFrame(s)}] += s.Value[0]
	}
	return byID
}

// writeSlowest writes where the time of one request of p, the slow-request
// profile, went, its largest parts as pprofotel slow lists them: the
// slowest of those a trace covered throughout, else the slowest.
func writeSlowest(w io.Writer, p *gpprof.Profile) {
	if p == nil || len(p.Sample) == 0 {
		fmt.Fprintln(w, "\nno slow request explained: the slow-request profile comes with the off-CPU one (PPROFOTEL_PROFILES=...,offcpu)")
		return
	}
	reqs := slices.Collect(maps.Values(slowRequests(p)))
	slices.SortFunc(reqs, func(a, b *slowRequest) int {
		if (a.untraced == 0) != (b.untraced == 0) {
			if a.untraced == 0 {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.dur, a.dur), cmp.Compare(a.id, b.id))
	})
	r := reqs[0]
	var parts []slowPart
	for part, d := range r.parts {
		part.dur = d
		parts = append(parts, part)
	}
	slices.SortFunc(parts, func(a, b slowPart) int { return cmp.Or(cmp.Compare(b.dur, a.dur), cmp.Compare(a.what, b.what)) })

	which := "the slowest"
	if r.untraced == 0 && reqs[len(reqs)-1].untraced != 0 {
		which = "the slowest that the execution trace covered throughout"
	}
	fmt.Fprintf(w, "\n%d slow requests explained (those over the slow-request threshold); %s, %s, took %v (%s):\n",
		len(reqs), which, r.route, time.Duration(r.dur).Round(time.Millisecond), r.id)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, part := range parts[:min(3, len(parts))] {
		if i > 0 && part.dur < r.dur/100 {
			break // under 1 %
		}
		fmt.Fprintf(tw, "  %v\t%.0f%%\t%s\t%s\n", time.Duration(part.dur).Round(time.Millisecond),
			100*float64(part.dur)/float64(r.dur), part.what, part.where)
	}
	tw.Flush()
	fmt.Fprintln(w, "  (its time by goroutine state and wait reason, in the application's function and the call it waited in)")
	if r.route == "/checkout" {
		fmt.Fprintf(w, "  (a checkout that finds the stock older than %v refreshes it in warehouse, for %v, holding the\n"+
			"  stock's lock: it waits in select there, and the checkouts behind it wait for the lock, off_cpu sync)\n",
			refreshEvery, refreshTime)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// appFrame names where in the application a sample of the slow-request
// profile was: the innermost function outside the standard library and,
// in parentheses, the standard-library function it called, as pprofotel
// slow does.
func appFrame(s *gpprof.Sample) string {
	var call string
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			fn := line.Function.Name
			if !standard(fn) {
				if call != "" {
					return shortName(fn) + " (" + shortName(call) + ")"
				}
				return shortName(fn)
			}
			call = fn
		}
	}
	return shortName(call)
}

// standard reports whether the function named fn is the standard
// library's: the first element of its package path has no dot and is not
// main.
func standard(fn string) bool {
	pkg := fn
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[:i]
	} else if i := strings.IndexByte(pkg, '.'); i >= 0 {
		pkg = pkg[:i]
	}
	elem, _, _ := strings.Cut(pkg, "/")
	return elem != "main" && !strings.Contains(elem, ".")
}
