package session_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Create a session with initial state; app: and user: keys land in their
// shared scopes and show in the merged view.
func ExampleService_Create() {
	ctx := context.Background()
	svc := memsession.NewService()

	s, err := svc.Create(ctx, session.Key{AppName: "shop", UserID: "ann", SessionID: "s1"},
		map[string]any{"app:currency": "EUR", "user:name": "Ann", "cart": []any{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.ID(), s.State())

	_, err = svc.Create(ctx, s.Key(), nil)
	fmt.Println(err)
	// Output:
	// s1 map[app:currency:EUR cart:[] user:name:Ann]
	// session: create s1: session already exists
}

// Append an event whose state delta touches every scope: temp: keys are
// visible only in the live session, app: and user: keys are shared, and a
// nil value deletes a key.
func ExampleService_AppendEvent() {
	ctx := context.Background()
	svc := memsession.NewService()
	s, _ := svc.Create(ctx, session.Key{AppName: "shop", UserID: "ann", SessionID: "s1"},
		map[string]any{"step": "browse"})

	ev := event.NewModelText("e-1", "agent", "Added to cart.")
	ev.Actions.StateDelta = map[string]any{
		"cart":         []any{"book"},
		"step":         nil, // deletes the key
		"user:visits":  1,
		"app:orders":   7,
		"temp:scratch": "only for this invocation",
	}
	if err := svc.AppendEvent(ctx, s, ev); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("live: ", s.State())

	fresh, _ := svc.Get(ctx, s.Key(), nil)
	fmt.Println("fresh:", fresh.State())
	fmt.Println("stored delta:", fresh.Events()[0].Actions.StateDelta)

	other, _ := svc.Create(ctx, session.Key{AppName: "shop", UserID: "bob"}, nil)
	fmt.Println("bob:  ", other.State())
	// Output:
	// live:  map[app:orders:7 cart:[book] temp:scratch:only for this invocation user:visits:1]
	// fresh: map[app:orders:7 cart:[book] user:visits:1]
	// stored delta: map[app:orders:7 cart:[book] step:<nil> user:visits:1]
	// bob:   map[app:orders:7]
}

// Read only the most recent events of a long session; the cost follows the
// size of the window, not of the session.
func ExampleService_Get() {
	ctx := context.Background()
	svc := memsession.NewService()
	s, _ := svc.Create(ctx, session.Key{AppName: "chat", UserID: "ann", SessionID: "s1"}, nil)
	for i := 1; i <= 10; i++ {
		_ = svc.AppendEvent(ctx, s, event.NewUserText("e-1", fmt.Sprint("message ", i)))
	}

	recent, _ := svc.Get(ctx, s.Key(), &session.GetOptions{NumRecentEvents: 3})
	for _, e := range recent.Events() {
		fmt.Println(e.Text())
	}
	meta, _ := svc.Get(ctx, s.Key(), &session.GetOptions{NoEvents: true})
	fmt.Println(meta.Len(), "events loaded")
	// What was appended since the log had 8 events; Seq is the log's length.
	since, _ := svc.Get(ctx, s.Key(), &session.GetOptions{AfterSeq: 8})
	fmt.Println(since.Len(), "events loaded of", since.Seq())
	// Output:
	// message 8
	// message 9
	// message 10
	// 0 events loaded
	// 2 events loaded of 10
}

// Refresh brings a copy of a session up to date with what another writer
// committed; an append through an outdated copy fails with ErrStale.
func ExampleService_Refresh() {
	ctx := context.Background()
	svc := memsession.NewService()
	key := session.Key{AppName: "chat", UserID: "ann", SessionID: "s1"}
	a, _ := svc.Create(ctx, key, nil)
	b, _ := svc.Get(ctx, key, nil)

	_ = svc.AppendEvent(ctx, b, event.NewUserText("e-1", "from b"))
	err := svc.AppendEvent(ctx, a, event.NewUserText("e-2", "from a"))
	fmt.Println(errors.Is(err, session.ErrStale))

	_ = svc.Refresh(ctx, a)
	fmt.Println(a.Len(), svc.AppendEvent(ctx, a, event.NewUserText("e-2", "from a")))
	// Output:
	// true
	// 1 <nil>
}

// ExampleScopeOf shows how a state key's prefix decides its scope.
func ExampleScopeOf() {
	for _, k := range []string{"app:theme", "user:name", "temp:draft", "count"} {
		scope, name := session.ScopeOf(k)
		fmt.Println(scope == session.ScopeSession, name)
	}
	// Output:
	// false theme
	// false name
	// false draft
	// true count
}
