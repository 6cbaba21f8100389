package agent

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/loomkit/loom/event"
)

// This file is the one place that runs user code (agents, tools, callbacks,
// workflow nodes, eval cases) concurrently or guarded, and the one place
// that turns its panics into errors. A panic on a goroutine of its own would
// end the process, and one on the caller's goroutine would cut a stream off
// half-way: the policy is that a panic of user code is that code's failure,
// reported as a [*PanicError] where its error would be.

// PanicError is a panic of user code, recovered by [Safely], [Concurrently]
// or [Relay.Run].
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, for logs.
	Stack []byte
}

// Error implements error. The message holds the panic value, not the stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Safely calls f and returns the panic it raised, or nil when f returned.
// Deferred calls of f run before Safely returns, as with any panic.
func Safely(f func()) (p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Concurrently calls f(0) … f(n-1), each on a goroutine of its own, and
// returns when all have returned. The i-th element of the result is the
// panic of f(i), or nil.
func Concurrently(n int, f func(i int)) []*PanicError {
	panics := make([]*PanicError, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { panics[i] = Safely(func() { f(i) }) })
	}
	wg.Wait()
	return panics
}

// Relay says what happens to the output of children run by [Relay.Run]. Its
// functions are called on the goroutine of Run, one at a time.
type Relay struct {
	// Event receives an event of child i. Returning false stops every
	// child.
	Event func(i int, ev *event.Event) bool
	// Done receives the end of child i: nil, the error it returned, or a
	// *PanicError. It is not called for a child whose emit reported false.
	// Returning false stops every child.
	Done func(i int, err error) bool
}

// Run runs child(ctx, 0, emit) … child(ctx, n-1, emit) concurrently, each on
// a goroutine of its own, and hands their events to r.Event one at a time,
// in the order they arrive. A child that emitted an event waits until
// r.Event has returned true (the event is committed, as if the child ran
// alone); emit then reports true. When r.Event or r.Done returns false or
// ctx is done, the children's context is cancelled and emit reports false.
// Run returns after every child has returned, so no goroutine outlives it:
// ctx's error when ctx ended first, nil otherwise.
func (r Relay) Run(ctx context.Context, n int, child func(ctx context.Context, i int, emit func(*event.Event) bool) error) error {
	type message struct {
		i      int
		ev     *event.Event
		err    error
		done   bool
		resume chan struct{} // room for one value: the relay never blocks on it
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	msgs := make(chan message)
	for i := range n {
		wg.Go(func() {
			resume := make(chan struct{}, 1)
			stopped := false
			emit := func(ev *event.Event) bool {
				select {
				case msgs <- message{i: i, ev: ev, resume: resume}:
				case <-cctx.Done():
					stopped = true
					return false
				}
				select {
				case <-resume:
					return true
				case <-cctx.Done():
					stopped = true
					return false
				}
			}
			var err error
			if p := Safely(func() { err = child(cctx, i, emit) }); p != nil {
				err = p
			}
			if stopped && err == nil {
				return
			}
			select {
			case msgs <- message{i: i, done: true, err: err}:
			case <-cctx.Done():
			}
		})
	}
	for running := n; running > 0; {
		select {
		case m := <-msgs:
			if m.done {
				running--
				if !r.Done(m.i, m.err) {
					return nil
				}
				continue
			}
			if !r.Event(m.i, m.ev) {
				return nil
			}
			m.resume <- struct{}{}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
