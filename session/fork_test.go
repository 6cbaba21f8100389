package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// forkFixture builds a session with three events:
//
//	e1: a=1, user:u=1
//	e2: a=2, b=1, app:x=1
//	e3: b=nil, c=1, user:u=2
//
// created with the initial state {init: "yes"}.
func forkFixture(t *testing.T) (*session.Service, *session.Session, []*event.Event) {
	t.Helper()
	ctx := context.Background()
	svc := memsession.NewService()
	src, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "src"}, map[string]any{"init": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	deltas := []map[string]any{
		{"a": 1, "user:u": 1},
		{"a": 2, "b": 1, "app:x": 1},
		{"b": nil, "c": 1, "user:u": 2},
	}
	var evs []*event.Event
	for i, d := range deltas {
		ev := event.NewUserText(fmt.Sprintf("e-%d", i+1), fmt.Sprint("message ", i+1))
		ev.Actions.StateDelta = d
		if err := svc.AppendEvent(ctx, src, ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return svc, src, evs
}

// TestForkUpToEvent checks a fork up to and including an event: its key,
// its events and the state as it was right after that event (CONFORMANCE
// S11).
func TestForkUpToEvent(t *testing.T) {
	ctx := context.Background()
	svc, src, evs := forkFixture(t)

	dst, err := svc.Fork(ctx, src.Key(), evs[1].ID, session.Key{SessionID: "dst"})
	if err != nil {
		t.Fatal(err)
	}
	if dst.AppName() != "app" || dst.UserID() != "u" || dst.ID() != "dst" {
		t.Fatalf("dst key = %+v", dst.Key())
	}
	if dst.Len() != 2 {
		t.Fatalf("dst has %d events, want 2", dst.Len())
	}
	for i := range 2 {
		got, want := dst.At(i), evs[i]
		if got.ID != want.ID || !got.Timestamp.Equal(want.Timestamp) || got.Text() != want.Text() {
			t.Errorf("event %d = %s %v %q, want %s %v %q", i, got.ID, got.Timestamp, got.Text(), want.ID, want.Timestamp, want.Text())
		}
	}
	// Session state as after e2; shared scopes are the current shared
	// values, untouched by the fork.
	want := map[string]any{"init": "yes", "a": 2, "b": 1, "app:x": 1, "user:u": 2}
	if got := dst.State(); !sameJSON(got, want) {
		t.Errorf("dst state = %v, want %v", got, want)
	}
	// The source is unchanged.
	again, err := svc.Get(ctx, src.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != 3 || !reflect.DeepEqual(again.State(), src.State()) {
		t.Errorf("source changed: %d events, state %v", again.Len(), again.State())
	}
}

// TestForkAllAndGeneratedID checks a fork of every event into a session
// with a generated id (CONFORMANCE S11).
func TestForkAllAndGeneratedID(t *testing.T) {
	ctx := context.Background()
	svc, src, _ := forkFixture(t)
	dst, err := svc.Fork(ctx, src.Key(), "", session.Key{})
	if err != nil {
		t.Fatal(err)
	}
	if dst.ID() == "" || dst.ID() == src.ID() {
		t.Fatalf("generated id = %q", dst.ID())
	}
	if dst.Len() != src.Len() {
		t.Errorf("dst has %d events, want %d", dst.Len(), src.Len())
	}
	if !reflect.DeepEqual(dst.State(), src.State()) {
		t.Errorf("dst state = %v, want %v", dst.State(), src.State())
	}
	// The fork goes its own way: appending to it leaves the source alone.
	if err := svc.AppendEvent(ctx, dst, &event.Event{Author: "user", Actions: event.Actions{StateDelta: map[string]any{"a": 9}}}); err != nil {
		t.Fatal(err)
	}
	s, _ := svc.Get(ctx, src.Key(), nil)
	if v, _ := s.Get("a"); v != 2.0 || s.Len() != 3 {
		t.Errorf("source a = %v with %d events after appending to the fork", v, s.Len())
	}
}

// TestForkBeforeFirstChange checks a fork at the first event: the changes
// later events made to session state are undone (CONFORMANCE S11).
func TestForkBeforeFirstChange(t *testing.T) {
	ctx := context.Background()
	svc, src, evs := forkFixture(t)
	dst, err := svc.Fork(ctx, src.Key(), evs[0].ID, session.Key{SessionID: "dst"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"init": "yes", "a": 1, "app:x": 1, "user:u": 2}
	if got := dst.State(); !sameJSON(got, want) {
		t.Errorf("dst state = %v, want %v", got, want)
	}
}

// TestForkErrors checks that a fork from a missing source, at an unknown
// event or into a taken id fails, and that a failed fork leaves no session
// behind (CONFORMANCE S11).
func TestForkErrors(t *testing.T) {
	ctx := context.Background()
	svc, src, _ := forkFixture(t)
	if _, err := svc.Fork(ctx, src.Key(), "no-such-event", session.Key{SessionID: "dst"}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("unknown event: err = %v, want ErrInvalid", err)
	}
	if _, err := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "dst"}, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("failed fork left a session behind: %v", err)
	}
	missing := session.Key{AppName: "app", UserID: "u", SessionID: "missing"}
	if _, err := svc.Fork(ctx, missing, "", session.Key{}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("missing source: err = %v, want ErrNotFound", err)
	}
	if _, err := svc.Fork(ctx, src.Key(), "", src.Key()); !errors.Is(err, session.ErrAlreadyExists) {
		t.Errorf("existing destination: err = %v, want ErrAlreadyExists", err)
	}
}

// Fork a conversation at an earlier event to try another answer from there.
func ExampleService_Fork() {
	ctx := context.Background()
	svc := memsession.NewService()
	src, _ := svc.Create(ctx, session.Key{AppName: "shop", UserID: "ann", SessionID: "s1"}, nil)
	first := event.NewUserText("e-1", "add an apple")
	first.Actions.StateDelta = map[string]any{"cart": "apple"}
	second := event.NewUserText("e-2", "add a pear")
	second.Actions.StateDelta = map[string]any{"cart": "apple, pear"}
	_ = svc.AppendEvent(ctx, src, first)
	_ = svc.AppendEvent(ctx, src, second)

	fork, err := svc.Fork(ctx, src.Key(), first.ID, session.Key{SessionID: "s1-fork"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cart, _ := fork.Get("cart")
	fmt.Println(fork.ID(), fork.Len(), "event(s), cart:", cart)
	cart, _ = src.Get("cart")
	fmt.Println(src.ID(), src.Len(), "event(s), cart:", cart)
	// Output:
	// s1-fork 1 event(s), cart: apple
	// s1 2 event(s), cart: apple, pear
}

// sameJSON reports whether a and b have the same JSON encoding: values
// replayed from stored events come back as JSON numbers (float64), as from
// every store.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
