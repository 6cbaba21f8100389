package agent

import (
	"context"
	"errors"
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
// or a [Relay].
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

// ErrNoChildRunning is returned by [Relay.Next] when no child is running:
// there is nothing to wait for.
var ErrNoChildRunning = errors.New("agent: relay has no child running")

// Relay runs children — user code that emits events — each on a goroutine
// of its own, started over time with [Relay.Go], and hands their events and
// ends to its owner one at a time through [Relay.Next]. A child that emitted
// an event waits until the owner has committed it (called Next again), as if
// it ran alone. Create a Relay with [NewRelay] and Close it when done; its
// methods are called from the owner's goroutine only.
type Relay struct {
	ctx     context.Context    // the owner's
	cctx    context.Context    // the children's, cancelled by Close
	cancel  context.CancelFunc // of cctx
	wg      sync.WaitGroup
	msgs    chan relayed
	pending chan struct{} // resumes the child whose event Next returned last
	started int           // children started so far
	running int           // children whose end Next has not returned
}

// Relayed is what [Relay.Next] hands over: an event of a child, or its end.
type Relayed struct {
	// Child is the child's index, as [Relay.Go] returned it.
	Child int
	// Event is the child's event, or nil when the child ended.
	Event *event.Event
	// Err is the child's end when Event is nil: nil, the error it
	// returned, or a *PanicError.
	Err error
}

// relayed is a message of a child to the owner.
type relayed struct {
	Relayed
	resume chan struct{} // room for one value: the owner never blocks on it
}

// NewRelay returns a relay whose children run under a context derived from
// ctx. When ctx is done, the children's context is too, and Next reports
// ctx's error.
func NewRelay(ctx context.Context) *Relay {
	cctx, cancel := context.WithCancel(ctx)
	return &Relay{ctx: ctx, cctx: cctx, cancel: cancel, msgs: make(chan relayed)}
}

// Go starts child on a goroutine of its own and returns its index: 0 for the
// first child started, 1 for the next, and so on. The child emits events
// through emit, from one goroutine at a time; emit reports true once the
// owner has committed the event, false when the relay stopped (the child
// should then return). Emitting nil does nothing. Go is not called after
// Close.
func (r *Relay) Go(child func(ctx context.Context, emit func(*event.Event) bool) error) int {
	i := r.started
	r.started++
	r.running++
	r.wg.Go(func() {
		resume := make(chan struct{}, 1)
		stopped := false
		emit := func(ev *event.Event) bool {
			if ev == nil {
				return true
			}
			select {
			case r.msgs <- relayed{Relayed: Relayed{Child: i, Event: ev}, resume: resume}:
			case <-r.cctx.Done():
				stopped = true
				return false
			}
			select {
			case <-resume:
				return true
			case <-r.cctx.Done():
				stopped = true
				return false
			}
		}
		var err error
		if p := Safely(func() { err = child(r.cctx, emit) }); p != nil {
			err = p
		}
		if stopped && err == nil {
			return // stopped, as it was told: nobody waits for its end
		}
		select {
		case r.msgs <- relayed{Relayed: Relayed{Child: i, Err: err}}:
		case <-r.cctx.Done():
		}
	})
	return i
}

// Running returns the number of children started whose end Next has not
// returned yet.
func (r *Relay) Running() int { return r.running }

// Next commits the event it returned last, if any (that child's emit
// reports true and the child goes on), then waits for the next event or end
// of a child, in the order they arrive, and returns it. It returns ctx's
// error when ctx is done, and [ErrNoChildRunning] when no child is running.
func (r *Relay) Next() (Relayed, error) {
	if r.pending != nil {
		r.pending <- struct{}{}
		r.pending = nil
	}
	if err := r.ctx.Err(); err != nil {
		return Relayed{}, err
	}
	if r.running == 0 {
		return Relayed{}, ErrNoChildRunning
	}
	select {
	case m := <-r.msgs:
		if m.Event == nil {
			r.running--
		} else {
			r.pending = m.resume
		}
		return m.Relayed, nil
	case <-r.ctx.Done():
		return Relayed{}, r.ctx.Err()
	}
}

// Close stops the children still running: their context is cancelled and
// their emit reports false, also for an event Next returned but did not
// commit. Close returns after every child has returned, so no goroutine
// outlives it.
func (r *Relay) Close() {
	r.cancel()
	r.wg.Wait()
}
