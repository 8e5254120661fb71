package offcpu

import "time"

// watchWith and endedWith report a request turned long and its end to r,
// with its route, as the request tracker does (a file of its own, so
// that BenchmarkSlowRates runs unchanged against the recorder before the
// route was reported).
func watchWith(r *Recorder, ids, route string, start time.Time) { r.Watch(ids, route, start) }

func endedWith(r *Recorder, ids string, start, end time.Time, route string) {
	r.Ended(ids, route, start, end)
}
