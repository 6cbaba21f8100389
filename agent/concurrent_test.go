package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// TestR8SafelyRecoversPanics checks the panic policy: a panic becomes a
// *PanicError with its value and stack, and an error value stays reachable.
func TestR8SafelyRecoversPanics(t *testing.T) {
	if p := agent.Safely(func() {}); p != nil {
		t.Fatalf("no panic: got %v", p)
	}
	p := agent.Safely(func() { panic("out of cheese") })
	if p == nil || p.Value != "out of cheese" || p.Error() != "panic: out of cheese" || !strings.Contains(string(p.Stack), "TestR8SafelyRecoversPanics") {
		t.Fatalf("panic = %+v", p)
	}
	errDisk := errors.New("disk full")
	if p := agent.Safely(func() { panic(errDisk) }); !errors.Is(p, errDisk) {
		t.Errorf("an error value is not wrapped: %v", p)
	}
	deferred := false
	agent.Safely(func() {
		defer func() { deferred = true }()
		panic(1)
	})
	if !deferred {
		t.Error("the function's deferred calls did not run")
	}
}

// TestR8ConcurrentlyRecoversEachPanic checks that every function runs on a
// goroutine of its own and that a panic is reported at its index only.
func TestR8ConcurrentlyRecoversEachPanic(t *testing.T) {
	var ran atomic.Int32
	started := make(chan struct{})
	panics := agent.Concurrently(3, func(i int) {
		ran.Add(1)
		if i == 0 {
			<-started // released by another goroutine: they run at once
			return
		}
		if i == 1 {
			close(started)
			return
		}
		panic(fmt.Sprint("call ", i))
	})
	if ran.Load() != 3 || len(panics) != 3 || panics[0] != nil || panics[1] != nil || panics[2] == nil || panics[2].Value != "call 2" {
		t.Fatalf("ran %d, panics %v", ran.Load(), panics)
	}
}

// relayAll starts children 0 … n-1 and relays until none runs, handing each
// event to onEvent and each end to onEnd; false from either stops the relay.
func relayAll(ctx context.Context, n int, child func(ctx context.Context, i int, emit func(*event.Event) bool) error,
	onEvent func(int, *event.Event) bool, onEnd func(int, error) bool) error {
	r := agent.NewRelay(ctx)
	defer r.Close()
	for i := range n {
		r.Go(func(ctx context.Context, emit func(*event.Event) bool) error { return child(ctx, i, emit) })
	}
	for r.Running() > 0 {
		m, err := r.Next()
		if err != nil {
			return err
		}
		if m.Event != nil && !onEvent(m.Child, m.Event) || m.Event == nil && !onEnd(m.Child, m.Err) {
			return nil
		}
	}
	return nil
}

// TestA4RelayWaitsForEachEvent checks the commit handshake: a child that
// emitted an event waits until the owner committed it (called Next again),
// and events are handed over one at a time.
func TestA4RelayWaitsForEachEvent(t *testing.T) {
	var inEvent atomic.Int32
	var committed [2]atomic.Int32
	var got []string
	done := map[int]error{}
	err := relayAll(context.Background(), 2, func(_ context.Context, i int, emit func(*event.Event) bool) error {
		for n := range 3 {
			if !emit(&event.Event{Author: fmt.Sprint(i)}) {
				t.Error("emit reported false")
			}
			if c := committed[i].Load(); c != int32(n+1) {
				t.Errorf("child %d went on after event %d with %d committed", i, n, c)
			}
		}
		if i == 1 {
			return errors.New("child failed")
		}
		return nil
	}, func(i int, ev *event.Event) bool {
		if inEvent.Add(1) != 1 {
			t.Error("two events handed over at once")
		}
		time.Sleep(time.Millisecond)
		committed[i].Add(1)
		got = append(got, ev.Author)
		inEvent.Add(-1)
		return true
	}, func(i int, err error) bool { done[i] = err; return true })
	if err != nil || len(got) != 6 || len(done) != 2 || done[0] != nil || done[1] == nil || done[1].Error() != "child failed" {
		t.Fatalf("err %v, events %v, done %v", err, got, done)
	}
}

// TestA4RelayStopsEveryChild checks that the owner stopping (here after a
// child's panic, reported as a *PanicError) cancels the others, and that
// Close returns only after every child has returned.
func TestA4RelayStopsEveryChild(t *testing.T) {
	var running atomic.Int32
	var panicErr error
	err := relayAll(context.Background(), 3, func(ctx context.Context, i int, emit func(*event.Event) bool) error {
		running.Add(1)
		defer running.Add(-1)
		if i == 0 {
			panic("out of cheese")
		}
		<-ctx.Done()
		if emit(&event.Event{}) {
			t.Error("emit reported true after the relay stopped")
		}
		return nil
	}, func(int, *event.Event) bool { return true }, func(_ int, err error) bool {
		panicErr = err
		return false
	})
	var pe *agent.PanicError
	if err != nil || !errors.As(panicErr, &pe) || pe.Value != "out of cheese" {
		t.Fatalf("err %v, done with %v", err, panicErr)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d children still running after Close returned", n)
	}
}

// TestA4RelayContextDone checks that a done context ends the relay with its
// error, even while every child is blocked, and that a child stopped so is
// not reported as ended.
func TestA4RelayContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var events atomic.Int32
	err := relayAll(ctx, 2, func(ctx context.Context, _ int, emit func(*event.Event) bool) error {
		for emit(&event.Event{}) {
		}
		return nil
	}, func(int, *event.Event) bool {
		if events.Add(1) == 2 {
			cancel()
		}
		return true
	}, func(int, error) bool { t.Error("end reported for a child that was stopped"); return true })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestA4RelayChildrenStartedOverTime checks children started while others
// run: indices in the order of Go, an event not committed until Next is
// called again, Running counting ends, an event returned but not committed
// reported false by Close, and Next on an idle relay.
func TestA4RelayChildrenStartedOverTime(t *testing.T) {
	r := agent.NewRelay(context.Background())
	if _, err := r.Next(); !errors.Is(err, agent.ErrNoChildRunning) {
		t.Fatalf("Next on an idle relay: %v", err)
	}
	var emitted atomic.Bool
	first := r.Go(func(_ context.Context, emit func(*event.Event) bool) error {
		ok := emit(&event.Event{Author: "first"})
		emitted.Store(true)
		if !ok {
			t.Error("the first child's event was not committed")
		}
		return nil
	})
	m, err := r.Next()
	if err != nil || m.Child != first || m.Event == nil || m.Event.Author != "first" {
		t.Fatalf("Next = %+v, %v", m, err)
	}
	time.Sleep(5 * time.Millisecond)
	if emitted.Load() {
		t.Fatal("the child went on before its event was committed")
	}
	stopped := make(chan bool, 1)
	gate := make(chan struct{})
	second := r.Go(func(_ context.Context, emit func(*event.Event) bool) error {
		<-gate
		stopped <- !emit(&event.Event{Author: "second"})
		return nil
	})
	if first != 0 || second != 1 || r.Running() != 2 {
		t.Fatalf("indices %d %d, running %d", first, second, r.Running())
	}
	if m, err := r.Next(); err != nil || m.Child != first || m.Event != nil || m.Err != nil {
		t.Fatalf("Next = %+v, %v; want the first child's end", m, err)
	}
	if !emitted.Load() || r.Running() != 1 {
		t.Errorf("committed %v, running %d", emitted.Load(), r.Running())
	}
	close(gate)
	if m, err := r.Next(); err != nil || m.Child != second || m.Event == nil {
		t.Fatalf("Next = %+v, %v; want the second child's event", m, err)
	}
	r.Close() // the second child's event is not committed
	if !<-stopped {
		t.Error("emit reported true for an event Close left uncommitted")
	}
}

func ExampleRelay() {
	r := agent.NewRelay(context.Background())
	defer r.Close()
	child := func(name string) func(context.Context, func(*event.Event) bool) error {
		return func(ctx context.Context, emit func(*event.Event) bool) error {
			// emit returns once the owner has committed the event.
			emit(&event.Event{Author: name})
			return nil
		}
	}
	r.Go(child("a"))
	var events, ends int
	for r.Running() > 0 {
		m, err := r.Next() // commits the event it returned last
		if err != nil {
			break
		}
		if m.Event == nil {
			ends++
			if ends == 1 {
				r.Go(child("b")) // children start as the owner goes
			}
			continue
		}
		events++
	}
	fmt.Println(events, ends)
	// Output: 2 2
}

func ExampleSafely() {
	p := agent.Safely(func() { panic("out of cheese") })
	fmt.Println(p)
	// Output: panic: out of cheese
}

func ExampleConcurrently() {
	squares := make([]int, 3)
	panics := agent.Concurrently(3, func(i int) {
		if i == 2 {
			panic("too big")
		}
		squares[i] = i * i
	})
	fmt.Println(squares, panics[0] == nil, panics[2])
	// Output: [0 1 0] true panic: too big
}
