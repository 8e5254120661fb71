package profiler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/deliver"
)

func TestSecondStartIsErrAlreadyRunning(t *testing.T) {
	p, err := Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(WithExporter(noneExporter{}))
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Start: err = %v, want ErrAlreadyRunning", err)
	}
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	p, err = Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
	if errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Start after Stop: %v", err)
	}
	p.Stop(stopContext(t))
}

// TestPublicErrorsExposeUndeliveredWindows checks that the delivery
// package's account of lost windows reaches callers as an
// *UndeliveredError, alone or joined with other errors, with the same
// message, windows and causes.
func TestPublicErrorsExposeUndeliveredWindows(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failed := errors.New("HTTP 400")
	de := &deliver.UndeliveredError{
		Windows: []deliver.Undelivered{
			{Start: start, End: start.Add(time.Minute), Err: failed},
			{Start: start.Add(time.Minute), End: start.Add(2 * time.Minute), Err: context.DeadlineExceeded},
		},
		Cause: context.DeadlineExceeded,
	}
	closing := errors.New("closing the exporter")
	for name, in := range map[string]error{
		"alone":  de,
		"joined": errors.Join(de, closing),
	} {
		t.Run(name, func(t *testing.T) {
			err := fmt.Errorf("profiler: stop: %w", publicErrors(in))
			var ue *UndeliveredError
			if !errors.As(err, &ue) {
				t.Fatalf("errors.As(%v) found no *UndeliveredError", err)
			}
			if len(ue.Windows) != 2 || !ue.Windows[0].Start.Equal(start) || ue.Windows[1].Err != context.DeadlineExceeded {
				t.Errorf("windows = %+v", ue.Windows)
			}
			if ue.Cause != context.DeadlineExceeded {
				t.Errorf("cause = %v", ue.Cause)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, failed) {
				t.Errorf("errors.Is does not reach the causes of %v", err)
			}
			if !strings.Contains(err.Error(), de.Error()) {
				t.Errorf("message %q lost %q", err, de.Error())
			}
			if name == "joined" && !errors.Is(err, closing) {
				t.Errorf("the exporter's error is lost from %v", err)
			}
		})
	}
	if publicErrors(nil) != nil {
		t.Error("publicErrors(nil) != nil")
	}
}
