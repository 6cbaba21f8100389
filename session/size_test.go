package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// sizeEvents returns n events of the kinds a conversation holds: user
// text, a function call, its response with a state delta, a model answer;
// text is the size of each user message.
func sizeEvents(n, text int) []*event.Event {
	evs := make([]*event.Event, 0, n)
	for i := range n {
		var ev *event.Event
		switch i % 4 {
		case 0:
			ev = event.NewUserText("e-1", fmt.Sprint(i, strings.Repeat("x", text)))
		case 1:
			ev = event.New("e-1", "agent")
			ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("add", map[string]any{"a": 1.0, "b": 2.0})}}
		case 2:
			ev = event.New("e-1", "agent")
			ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromFunctionResponse("add", map[string]any{"result": 3.0, "note": "added"})}}
			ev.Actions.StateDelta = map[string]any{"total": float64(i), "history": []any{"a", "b"}}
		default:
			ev = event.NewModelText("e-1", "agent", fmt.Sprint("the answer is ", i))
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestSizeTracksEvents checks that a session's size estimate grows with
// each appended event, agrees between a copy kept up to date by appends, one
// brought up to date by Refresh and a fresh load, and counts a large message
// at about its length.
func TestSizeTracksEvents(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	key := session.Key{AppName: "app", UserID: "u", SessionID: "s"}
	a, err := svc.Create(ctx, key, map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size() <= 0 || a.Size() != b.Size() {
		t.Fatalf("sizes of an empty session: %d and %d, want equal and positive", a.Size(), b.Size())
	}
	prev := a.Size()
	for _, ev := range sizeEvents(8, 100) {
		if err := svc.AppendEvent(ctx, a, ev); err != nil {
			t.Fatal(err)
		}
		if a.Size() <= prev {
			t.Fatalf("size after an append: %d, want more than %d", a.Size(), prev)
		}
		prev = a.Size()
	}
	big := event.NewUserText("e-2", strings.Repeat("y", 1<<20))
	if err := svc.AppendEvent(ctx, a, big); err != nil {
		t.Fatal(err)
	}
	if grew := a.Size() - prev; grew < 1<<20 || grew > 1<<20+4096 {
		t.Fatalf("a 1 MiB message grew the size by %d bytes, want about 1 MiB", grew)
	}
	if err := svc.Refresh(ctx, b); err != nil {
		t.Fatal(err)
	}
	fresh, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The copies hold the same events; the appending copy counts its state
	// as loaded and its deltas with their events, so it may differ by the
	// size of the deltas. The loaded copy holds references to the events
	// the in-memory store keeps encoded (but for the first), which it
	// does not count: the 1 MiB message is the store's.
	if d := a.Size() - b.Size(); d < -1024 || d > 1024 || fresh.Size() >= 1<<20 || fresh.Size() <= 0 {
		t.Fatalf("sizes: appended %d, refreshed %d, loaded %d; want the first two equal, the third without the message", a.Size(), b.Size(), fresh.Size())
	}
}

// TestSizeIsHonest compares the estimate with the heap that events read
// back from storage take, for many small events and for large messages.
func TestSizeIsHonest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		text   int
		lo, hi float64 // bounds of estimate / measured
	}{
		{"small events", 4000, 40, 0.7, 1.4},
		{"large messages", 40, 64 << 10, 0.8, 1.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Decode the events as a store reading them back does, so that
			// their memory is their own.
			raw := encodedEvents(t, tc.n, tc.text)
			before := heapAlloc()
			var evs []*event.Event
			if err := json.Unmarshal(raw, &evs); err != nil {
				t.Fatal(err)
			}
			measured := int64(heapAlloc()) - int64(before)
			var estimate int64
			for _, ev := range evs {
				estimate += session.EventSizeForTest(ev)
			}
			runtime.KeepAlive(evs)
			runtime.KeepAlive(raw)
			ratio := float64(estimate) / float64(measured)
			t.Logf("estimate %d B, measured %d B, ratio %.2f", estimate, measured, ratio)
			if ratio < tc.lo || ratio > tc.hi {
				t.Fatalf("estimate %d B for %d B measured: ratio %.2f, want within [%.2f, %.2f]", estimate, measured, ratio, tc.lo, tc.hi)
			}
		})
	}
}

// TestEventSizeDoesNotAllocate guards the append path: estimating an
// event's size costs no allocation.
func TestEventSizeDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	s, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := sizeEvents(4, 10)
	for _, ev := range evs {
		if err := svc.AppendEvent(ctx, s, ev); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = session.EventSizeForTest(evs[2]) }); n != 0 {
		t.Fatalf("estimating an event's size allocates %v times, want 0", n)
	}
}

// encodedEvents returns sizeEvents(n, text) as JSON, keeping nothing else.
func encodedEvents(t *testing.T, n, text int) []byte {
	raw, err := json.Marshal(sizeEvents(n, text))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // pools keep their objects through one collection
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
