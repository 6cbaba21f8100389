package session_test

import (
	"fmt"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// fill creates a session holding n events, each with a one-key state delta.
func fill(b *testing.B, svc *session.Service, id string, n int) *session.Session {
	b.Helper()
	ctx := b.Context()
	s, err := svc.Create(ctx, session.Key{AppName: "bench", UserID: "u", SessionID: id}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		e := event.NewModelText("e-bench", "agent", "event text")
		e.Actions.StateDelta = map[string]any{"k": i}
		if err := svc.AppendEvent(ctx, s, e); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkAppendEvent measures committing one event with a one-key state
// delta to an in-memory session.
func BenchmarkAppendEvent(b *testing.B) {
	svc := memsession.NewService()
	s := fill(b, svc, "s", 0)
	ctx := b.Context()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		e := event.NewModelText("e-bench", "agent", "event text")
		e.Actions.StateDelta = map[string]any{"k": i}
		if err := svc.AppendEvent(ctx, s, e); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGetRecent100 reads the 100 most recent events of a short and of
// a long session: the cost must not depend on the session's length.
func BenchmarkGetRecent100(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			svc := memsession.NewService()
			s := fill(b, svc, "s", n)
			ctx := b.Context()
			opts := &session.GetOptions{NumRecentEvents: 100}
			b.ReportAllocs()
			for b.Loop() {
				got, err := svc.Get(ctx, s.Key(), opts)
				if err != nil {
					b.Fatal(err)
				}
				if got.Len() != 100 {
					b.Fatalf("got %d events", got.Len())
				}
			}
		})
	}
}

// BenchmarkRefresh refreshes a copy of a 100,000-event session when nothing
// is new: the cost must not depend on the session's length.
func BenchmarkRefresh(b *testing.B) {
	svc := memsession.NewService()
	s := fill(b, svc, "s", 100_000)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := svc.Refresh(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}
