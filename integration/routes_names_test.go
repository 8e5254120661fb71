package integration

import "time"

// The names the route and slow-request features chose (issue 29;
// docs/what-is-sent.md, docs/slow-requests.md), gathered here so that the
// proof reads them from one place.
const (
	// routeKey is the sample attribute carrying a sample's route.
	routeKey = "route"
	// requestsProfile is the profile (pprofotel.profile.name) counting
	// the requests that ended per route in each window.
	requestsProfile = "requests"
	// slowProfile is the slow-request profile; slowStateKey is its
	// sample attribute saying where the time went, slowStateOffCPU and
	// slowStateRunnable its values for time off CPU and waiting for one.
	slowProfile       = "slowrequests"
	slowStateKey      = "goroutine_state"
	slowStateOffCPU   = "off_cpu"
	slowStateRunnable = "runnable"
	// slowThreshold is the default duration from which a request is
	// explained.
	slowThreshold = 100 * time.Millisecond
)
