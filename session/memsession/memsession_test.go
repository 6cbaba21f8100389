package memsession_test

import (
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sessiontest"
)

func TestConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		st := memsession.New()
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func FuzzAppendStateDelta(f *testing.F) {
	sessiontest.FuzzAppendStateDelta(f, memsession.New())
}

// BenchmarkListWalk measures a full walk, 1,000 sessions a page, of the
// 10,000 sessions of one app (spread over 10 users). A page costs a binary
// search and its own size, so the walk is linear in the number of sessions.
func BenchmarkListWalk(b *testing.B) {
	svc := memsession.NewService()
	ctx := b.Context()
	for i := range 10000 {
		k := session.Key{AppName: "bench", UserID: fmt.Sprintf("u%d", i%10), SessionID: fmt.Sprintf("s%05d", i)}
		if _, err := svc.Create(ctx, k, map[string]any{"i": i}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n, token := 0, ""
		for {
			res, err := svc.List(ctx, "bench", "", &session.ListOptions{PageSize: 1000, PageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Sessions)
			if token = res.NextPageToken; token == "" {
				break
			}
		}
		if n != 10000 {
			b.Fatalf("walked %d sessions, want 10000", n)
		}
	}
}

// s1Events returns the four events of one turn of a calculator agent: the
// user's question, the model's call of add, the tool's answer and the
// model's reply.
func s1Events() []*event.Event {
	inv := event.NewInvocationID()
	q := event.NewUserText(inv, "What is 1 + 2?")
	call := event.New(inv, "calculator")
	callID := event.NewCallID()
	call.Content = genai.NewContentFromFunctionCall("add", map[string]any{"a": 1, "b": 2}, genai.RoleModel)
	call.Content.Parts[0].FunctionCall.ID = callID
	call.FinishReason, call.TurnComplete = genai.FinishReasonStop, true
	resp := event.New(inv, "calculator")
	resp.Content = genai.NewContentFromFunctionResponse("add", map[string]any{"result": 3}, genai.RoleUser)
	resp.Content.Parts[0].FunctionResponse.ID = callID
	reply := event.NewModelText(inv, "calculator", "3")
	reply.FinishReason, reply.TurnComplete = genai.FinishReasonStop, true
	return []*event.Event{q, call, resp, reply}
}

// BenchmarkSessionMemory measures the live heap the store holds per
// session: 20,000 sessions of four events each (one calculator turn),
// reported as B/session after a garbage collection.
func BenchmarkSessionMemory(b *testing.B) {
	const n = 20_000
	ctx := b.Context()
	for b.Loop() {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		svc := memsession.NewService()
		for i := range n {
			s, err := svc.Create(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: fmt.Sprintf("s%05d", i)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range s1Events() {
				if err := svc.AppendEvent(ctx, s, e); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		got, err := svc.Get(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: "s00000"}, nil)
		if err != nil || got.Len() != 4 {
			b.Fatalf("first session: %v, %v", got, err)
		}
		runtime.KeepAlive(svc)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/session")
		b.StartTimer()
	}
}

// BenchmarkGetAmongMany reads one session, without events, of the 100,000
// sessions of an app: the cost of finding a session among many.
func BenchmarkGetAmongMany(b *testing.B) {
	const n = 100_000
	st := memsession.New()
	ctx := b.Context()
	keys := make([]session.Key, n)
	for i := range keys {
		keys[i] = session.Key{AppName: "bench", UserID: fmt.Sprintf("u%02d", i%50), SessionID: event.NewID()}
		if err := st.CreateSession(ctx, &session.Record{Key: keys[i]}, session.Delta{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := st.GetSession(ctx, keys[i%n], session.Window{None: true}); err != nil {
			b.Fatal(err)
		}
		i += 7919
	}
}
