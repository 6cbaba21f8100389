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

// TestA4RelayWaitsForEachEvent checks the commit handshake: a child that
// emitted an event waits until the relay's Event returned, and events are
// handed over one at a time.
func TestA4RelayWaitsForEachEvent(t *testing.T) {
	var inEvent atomic.Int32
	var committed [2]atomic.Int32
	var got []string
	done := map[int]error{}
	err := agent.Relay{
		Event: func(i int, ev *event.Event) bool {
			if inEvent.Add(1) != 1 {
				t.Error("two events handed over at once")
			}
			time.Sleep(time.Millisecond)
			committed[i].Add(1)
			got = append(got, ev.Author)
			inEvent.Add(-1)
			return true
		},
		Done: func(i int, err error) bool { done[i] = err; return true },
	}.Run(context.Background(), 2, func(_ context.Context, i int, emit func(*event.Event) bool) error {
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
	})
	if err != nil || len(got) != 6 || len(done) != 2 || done[0] != nil || done[1] == nil || done[1].Error() != "child failed" {
		t.Fatalf("err %v, events %v, done %v", err, got, done)
	}
}

// TestA4RelayStopsEveryChild checks that Done returning false (here after a
// child's panic) cancels the others, and that Run returns only after every
// child has returned.
func TestA4RelayStopsEveryChild(t *testing.T) {
	var running atomic.Int32
	var panicErr error
	err := agent.Relay{
		Event: func(int, *event.Event) bool { return true },
		Done: func(_ int, err error) bool {
			panicErr = err
			return false
		},
	}.Run(context.Background(), 3, func(ctx context.Context, i int, emit func(*event.Event) bool) error {
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
	})
	var pe *agent.PanicError
	if err != nil || !errors.As(panicErr, &pe) || pe.Value != "out of cheese" {
		t.Fatalf("err %v, done with %v", err, panicErr)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d children still running after Run returned", n)
	}
}

// TestA4RelayContextDone checks that a done context ends Run with its
// error, even while every child is blocked.
func TestA4RelayContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var events atomic.Int32
	err := agent.Relay{
		Event: func(int, *event.Event) bool {
			if events.Add(1) == 2 {
				cancel()
			}
			return true
		},
		Done: func(int, error) bool { t.Error("Done called for a child that was stopped"); return true },
	}.Run(ctx, 2, func(ctx context.Context, _ int, emit func(*event.Event) bool) error {
		for emit(&event.Event{}) {
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func ExampleRelay_Run() {
	var authors []string
	err := agent.Relay{
		// Called one event at a time; the child waits until it returns.
		Event: func(i int, ev *event.Event) bool {
			authors = append(authors, ev.Author)
			return true
		},
		Done: func(i int, err error) bool { return err == nil },
	}.Run(context.Background(), 2, func(ctx context.Context, i int, emit func(*event.Event) bool) error {
		emit(&event.Event{Author: fmt.Sprint("child", i)})
		return nil
	})
	fmt.Println(len(authors), err)
	// Output: 2 <nil>
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
