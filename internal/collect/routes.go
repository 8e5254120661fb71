package collect

import (
	"slices"
	"strings"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/labelkey"
)

// Requests is the name of the window's request counts profile: not a
// runtime profile, but one the collector adds to every window in which
// requests ended (see requestsProfile).
const Requests = "requests"

// RequestsType is the one sample type of the request counts profile.
var RequestsType = pprofdecode.ValueType{Type: "requests", Unit: "count"}

// labelRoutes replaces each sample's local root span id label with the
// root's route under requests.RouteKey: as q knows it, else as the
// span's labels carry it (the route the root started with), bounded by
// the window; it removes the label when neither tells it. The samples
// of a goroutine profile taken as the window ends (snapshot) may name
// requests their goroutines outlived (requests.Requests.SnapshotRoute).
// The span stays linked through its own ids; a label of the application
// under the route's key gives way to ours, as the span's labels win
// over the application's (package labels).
func labelRoutes(p *pprofdecode.Profile, q *requests.Requests, snapshot bool) {
	if p == nil {
		return
	}
	route := q.Route
	if snapshot {
		route = q.SnapshotRoute
	}
	for i := range p.Samples {
		s := &p.Samples[i]
		root := labelIndex(s.Labels, labelkey.LocalRootSpanID)
		if root < 0 {
			continue
		}
		e, ok := route(s.Labels[root].Str)
		if !ok {
			if j := labelIndex(s.Labels, requests.RouteKey); j >= 0 {
				e, ok = q.Admit(s.Labels[j].Str), true
			}
		}
		kept := s.Labels[:0]
		for j, l := range s.Labels {
			switch {
			case j == root:
				if !ok {
					continue
				}
				l = pprofdecode.Label{Key: requests.RouteKey, Str: e}
			case l.Key == requests.RouteKey && ok,
				l.Key == labelkey.LocalRootSpanID:
				continue
			}
			kept = append(kept, l)
		}
		s.Labels = kept
	}
}

// labelIndex returns the index of the string label key among ls, -1 if
// there is none.
func labelIndex(ls []pprofdecode.Label, key string) int {
	return slices.IndexFunc(ls, func(l pprofdecode.Label) bool { return l.Key == key && !l.IsNum })
}

// snapshotRoots returns the local root span ids that the samples of w's
// goroutine and goroutine-leak profiles name: the requests of the
// goroutines alive at the window's end.
func snapshotRoots(w *Window) []string {
	var ids []string
	for _, p := range w.Profiles {
		if p.Data != nil && isSnapshot(p.Name) {
			ids = append(ids, sampledRoots(p.Data)...)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// isSnapshot reports whether the profile named name is a goroutine
// profile taken as the window ends.
func isSnapshot(name string) bool { return name == Goroutine || name == GoroutineLeak }

// unsettled returns the local root span ids that w's samples name and that
// q says may still be renamed (requests.Requests.Unsettled).
func unsettled(w *Window, q *requests.Requests) []string {
	var ids []string
	for _, p := range w.Profiles {
		if p.Data == nil {
			continue
		}
		for i := range p.Data.Samples {
			ls := p.Data.Samples[i].Labels
			if j := labelIndex(ls, labelkey.LocalRootSpanID); j >= 0 && q.Unsettled(ls[j].Str) {
				ids = append(ids, ls[j].Str)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// requestsProfile returns the request counts of a window as a profile: one
// sample per route, its value the requests that ended in the window,
// labelled with the route, on a one-frame stack whose function is the
// route, so that a flame graph or pprof's top lists the routes by
// their requests. Routes that only ran count nothing and are left out;
// nil when no request ended.
func requestsProfile(counts map[string]int64) *pprofdecode.Profile {
	routes := make([]string, 0, len(counts))
	for e, n := range counts {
		if n > 0 {
			routes = append(routes, e)
		}
	}
	if len(routes) == 0 {
		return nil
	}
	slices.SortFunc(routes, strings.Compare)
	p := &pprofdecode.Profile{
		SampleTypes:       []pprofdecode.ValueType{RequestsType},
		DefaultSampleType: RequestsType.Type,
		PeriodType:        RequestsType,
		Period:            1,
		Samples:           make([]pprofdecode.Sample, len(routes)),
		Locations:         make([]pprofdecode.Location, len(routes)),
		Functions:         make([]pprofdecode.Function, len(routes)),
	}
	for i, e := range routes {
		p.Functions[i] = pprofdecode.Function{Name: e, SystemName: e}
		p.Locations[i] = pprofdecode.Location{Mapping: -1, Lines: []pprofdecode.Line{{Function: int32(i)}}}
		p.Samples[i] = pprofdecode.Sample{
			Locations: []int32{int32(i)},
			Values:    []int64{counts[e]},
			Labels:    []pprofdecode.Label{{Key: requests.RouteKey, Str: e}},
		}
	}
	return p
}
