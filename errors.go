package profiler

import (
	"errors"
	"time"

	"github.com/pprofotel/profiler/internal/deliver"
)

// ErrAlreadyRunning is returned by [Start] while another [Profiler] runs in
// the process: the CPU profile and the runtime's mutex and block rates are
// process-wide, so there can be only one. Stop the other first.
var ErrAlreadyRunning = errors.New("profiler: another profiler is already running in this process; Stop it first")

// UndeliveredError is in the error [Profiler.Stop] returns when windows
// were not delivered: it lists each of them and why. errors.As finds it in
// Stop's error; errors.Is finds context.DeadlineExceeded when Stop's
// deadline ended the exports.
type UndeliveredError struct {
	// Windows lists the windows lost, oldest first.
	Windows []UndeliveredWindow
	// Cause is the error of Stop's context when it ended the exports, nil
	// when the windows failed on their own (a permanent error, retries
	// run out).
	Cause error

	err *deliver.UndeliveredError
}

// UndeliveredWindow is a collection window that was not delivered.
type UndeliveredWindow struct {
	// Start and End delimit the window.
	Start, End time.Time
	// Err says why it was not delivered.
	Err error
}

// Error names every window by its time range, with its reason.
func (e *UndeliveredError) Error() string { return e.err.Error() }

// Unwrap returns Cause and each window's error.
func (e *UndeliveredError) Unwrap() []error { return e.err.Unwrap() }

// publicErrors replaces the delivery package's account of lost windows in
// err, which callers cannot name, by an *UndeliveredError, which they can.
func publicErrors(err error) error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if _, ok := err.(*deliver.UndeliveredError); !ok {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
		if de, ok := e.(*deliver.UndeliveredError); ok {
			ue := &UndeliveredError{Cause: de.Cause, err: de, Windows: make([]UndeliveredWindow, len(de.Windows))}
			for j, w := range de.Windows {
				ue.Windows[j] = UndeliveredWindow(w)
			}
			out[i] = ue
		}
	}
	return errors.Join(out...)
}
