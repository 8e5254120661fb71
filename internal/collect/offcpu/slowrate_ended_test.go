package offcpu

import "time"

// watchWith and endedWith report a request turned long and its end to r,
// with its endpoint, as the request tracker does (a file of its own, so
// that BenchmarkSlowRates runs unchanged against the recorder before the
// endpoint was reported).
func watchWith(r *Recorder, ids, endpoint string, start time.Time) { r.Watch(ids, endpoint, start) }

func endedWith(r *Recorder, ids string, start, end time.Time, endpoint string) {
	r.Ended(ids, endpoint, start, end)
}
