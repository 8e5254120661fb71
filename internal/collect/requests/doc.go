// Package requests follows the requests of a process, a request being a
// local root span: a span with no parent span in this process. The label
// wrapper (package labels) reports each sampled local root span to the
// installed Tracker with Begin, and its new name or route and its end to
// the Request Begin returned. Per window, the Tracker counts the requests
// that ended by route (the span's http.route, else its name), bounded
// to a number of distinct routes, and maps the root span ids of the
// window's samples to their route; it also tells a watcher of the
// requests that run long (Config.OnLong), for the slow-request profile.
package requests
