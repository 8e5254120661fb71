package offcpu

import "time"

// endedWith reports a watched request's end to r, with its endpoint.
func endedWith(r *Recorder, ids string, start, end time.Time, endpoint string) {
	r.Ended(ids, start, end)
}
