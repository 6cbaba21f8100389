package agent_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// TestPendingInLongTrimmedSession: the answer to a long-running call made
// a thousand events ago is matched to it, and an answer to no call is
// refused, each without decoding the events between (decoding them all
// would take thousands of allocations).
func TestPendingInLongTrimmedSession(t *testing.T) {
	sess := longPendingSession(t)
	allocs := testing.AllocsPerRun(10, func() {
		pcs, err := agent.Pending(sess, answer("call-1"))
		if err != nil || len(pcs) != 1 || pcs[0].CallIndex != 1 || pcs[0].Kind != agent.PauseTool || pcs[0].InvocationID != "e-1" {
			t.Fatalf("pending %+v, %v", pcs, err)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to find a call 1,000 events back", allocs)
	}
	allocs = testing.AllocsPerRun(10, func() {
		if _, err := agent.Pending(sess, answer("call-2")); !errors.Is(err, agent.ErrNotPending) {
			t.Fatalf("an answer to no call: %v", err)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to refuse an answer to no call", allocs)
	}
}

// longPendingSession returns a trimmed session whose second event makes
// the long-running call "call-1", followed by 1,000 other events.
func longPendingSession(tb testing.TB) *session.Session {
	tb.Helper()
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	call := event.New("e-1", "agent")
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "approve"}}}}
	call.LongRunningToolIDs = []string{"call-1"}
	evs := []*event.Event{event.NewUserText("e-1", "start"), call}
	for range 1000 {
		evs = append(evs, event.NewModelText("e-2", "agent", "meanwhile"))
	}
	for _, ev := range evs {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			tb.Fatal(err)
		}
	}
	sess.Trim(4)
	return sess
}

// answer is a client message answering the call id.
func answer(id string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "approve", Response: map[string]any{"ok": true}}}}}
}

// BenchmarkPendingLongSession matches an answer to a call 1,000 events
// back in a trimmed session.
func BenchmarkPendingLongSession(b *testing.B) {
	sess := longPendingSession(b)
	msg := answer("call-1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agent.Pending(sess, msg); err != nil {
			b.Fatal(err)
		}
	}
}
