// Package deliver carries the requests of finished windows from the
// profiler's collection loop to an exporter, so that collection never waits
// on the network.
//
// A Queue is bounded: it holds at most a number of windows and a budget
// of bytes (the protobuf size of their requests). When a new window does not
// fit, the oldest queued windows are dropped first, because a recent window
// tells more about the running program than an old one. Every drop is
// counted, and logged at most once per interval with the number of drops
// since the previous line.
//
// One goroutine exports the queue in order, one window per Export call
// (the exporter splits a request too large for its receiver). What the
// exporter reports of each call through package report (retries, bytes
// accepted, files removed) is added to the Outcomes. Shutdown exports what is queued within its context's
// deadline and reports, window by window, what it could not deliver. It
// returns by that deadline even when an export ignores its context (an
// application's transport can): the export is given up, and a Gate keeps
// the goroutine left blocked in it from touching the application's state
// when it returns.
package deliver
