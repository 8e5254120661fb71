package offcpu

import "golang.org/x/exp/trace"

// openWait is a wait still open where a trace was read to, handed to the
// reading of the trace that follows it at once (a stretch at a duty cycle
// of 100 %, or started at a collection while requests are watched), so
// that the wait is counted once, whole, when it ends.
type openWait struct {
	id trace.GoID
	// start is when the wait began, Unix nanoseconds, or the window
	// boundary it was split at; until is where the trace before was
	// read to.
	start, until int64
	reason       string
	stack        trace.Stack
	span         string
	known        bool
	// pending are the events of the goroutine's waits whose span is not
	// known yet, in a window both readings add to.
	pending []int32
}

// handOver takes the waits still open at the last event read out of the
// reading, for the next stretch's reading to carry on. With split set the
// next stretch is in the next window: the part of each wait up to the
// last event is recorded in this window, and the next reading counts on
// from there; otherwise the next reading records each whole.
func (s *reading) handOver(split bool) []openWait {
	if s.w.full() {
		return nil
	}
	end := s.wall(s.last)
	var out []openWait
	for id, g := range s.goroutines {
		if !g.waiting {
			continue
		}
		start := g.startWall
		if start == 0 {
			start = s.wall(g.start)
		}
		ow := openWait{id: id, start: start, until: end, reason: g.reason, stack: g.stack, span: s.spanOf(g), known: g.known}
		if split {
			s.addAt(g, end)
			ow.start = end
		} else {
			ow.pending = g.pending
		}
		g.waiting = false
		out = append(out, ow)
	}
	return out
}

// carry takes up the waits the reading before handed over, before any
// event of this reading's trace.
func (s *reading) carry(ws []openWait) {
	for _, ow := range ws {
		g := s.goroutine(ow.id)
		g.waiting, g.startWall, g.until, g.confirm = true, ow.start, ow.until, true
		g.reason, g.stack, g.known, g.pending = ow.reason, ow.stack, ow.known, ow.pending
		s.setSpan(g, ow.span)
	}
}

// cross marks where one trace read into the reading ends and the next
// begins (the short trace before a stretch's): the waits open carry on
// into the next, as carry does.
func (s *reading) cross() {
	end := s.wall(s.last)
	for _, g := range s.goroutines {
		if !g.waiting {
			continue
		}
		if g.startWall == 0 {
			g.startWall = s.wall(g.start)
		}
		g.until, g.confirm = end, true
	}
}

// confirm applies the first transition of a goroutine whose wait was
// carried into this trace: it went on between the two traces unless the
// trace finds the goroutine running, or waiting elsewhere (by the stack a
// goroutine found waiting is given). Then the wait ended unseen between
// the traces, after the one before was read to: it counts up to there.
func (s *reading) confirm(g *goroutine, from, to trace.GoState, stk trace.Stack) {
	g.confirm = false
	if !g.waiting || from != trace.GoUndetermined {
		return
	}
	moved := stk != trace.NoStack && g.stack != trace.NoStack && !samePlace(s.framesOf(g.stack), s.framesOf(stk))
	if to == trace.GoRunning || moved {
		g.waiting = false
		s.addAt(g, g.until)
	}
}

// split records the part of every wait still open up to the last event
// read into the reading's window, which ends there, and counts each on
// from there: the reading goes on into the next window (retarget).
func (s *reading) split() {
	end := s.wall(s.last)
	for _, g := range s.goroutines {
		if g.waiting && !s.w.full() {
			s.addAt(g, end)
			g.startWall = end
		}
		// The events are the window's that ends.
		g.pending = nil
	}
}

// retarget makes the reading add to w from now on, and forgets what it
// kept of the trace's stacks, which a long reading would otherwise keep
// for every generation.
func (s *reading) retarget(w *window) {
	s.w = w
	clear(s.stacks)
	clear(s.frames)
}
