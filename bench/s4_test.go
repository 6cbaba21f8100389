package bench_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// s4Events is the length of the S4 session.
const s4Events = 10000

// BenchmarkS4 is scenario S4, on SQLite (a file in a temporary directory,
// WAL) and, when LOOM_TEST_POSTGRES_URL names a server, on PostgreSQL:
//
//   - Append: append 10,000 events, each with a one-key state delta, to one
//     session through the session service, one at a time (events/s);
//   - AppendParallel: append 10,000 events in all, each with a one-key
//     state delta, from 16 sessions at once (625 each, one at a time per
//     session), as a server with many conversations does (events/s);
//   - Read10000: read that session with all its events (ns, B, allocs),
//     which a store may hand over encoded, to be decoded when read;
//     Read10000Events also reads every event, decoded;
//   - S1: scenario S1 with sessions on that backend: each iteration is
//     exactly 2,000 invocations round-robin over 100 sessions (ns/inv).
//
// Append and S1 do their whole defined work in every iteration, so
// -benchtime 1x measures each once; Read10000 is one read per iteration.
func BenchmarkS4(b *testing.B) {
	b.Run("SQLite", func(b *testing.B) {
		benchS4(b, func(b *testing.B) string {
			return "sqlite://" + filepath.Join(b.TempDir(), "s4.db")
		})
	})
	b.Run("Postgres", func(b *testing.B) {
		sqldbtest.PostgresServer(b)
		benchS4(b, func(b *testing.B) string { return sqldbtest.PostgresURL(b) })
	})
}

func benchS4(b *testing.B, newURL func(b *testing.B) string) {
	ctx := context.Background()
	open := func(b *testing.B) *session.Service {
		svc, err := sqlsession.NewService(ctx, newURL(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { svc.Close() })
		return svc
	}
	appendAll := func(b *testing.B, svc *session.Service, id string) {
		sess, err := svc.Create(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := range s4Events {
			ev := event.NewModelText("inv", "agent", "event text")
			ev.Actions.StateDelta = map[string]any{"counter": i}
			if err := svc.AppendEvent(ctx, sess, ev); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("Append", func(b *testing.B) {
		svc := open(b)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			appendAll(b, svc, fmt.Sprint("append", n))
			n++
		}
		b.StopTimer()
		sess, err := svc.Get(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: "append0"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if v, _ := sess.Get("counter"); sess.Len() != s4Events || fmt.Sprint(v) != fmt.Sprint(s4Events-1) {
			b.Fatalf("appended session holds %d events and counter %v, want %d and %d", sess.Len(), v, s4Events, s4Events-1)
		}
		b.ReportMetric(float64(n*s4Events)/b.Elapsed().Seconds(), "events/s")
	})

	b.Run("AppendParallel", func(b *testing.B) {
		const sessions = 16
		svc := open(b)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			b.StopTimer()
			sess := make([]*session.Session, sessions)
			for i := range sess {
				var err error
				key := session.Key{AppName: "bench", UserID: "user", SessionID: fmt.Sprintf("par%d-%d", n, i)}
				if sess[i], err = svc.Create(ctx, key, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			var wg sync.WaitGroup
			errs := make(chan error, sessions)
			for _, s := range sess {
				wg.Go(func() {
					for i := range s4Events / sessions {
						ev := event.NewModelText("inv", "agent", "event text")
						ev.Actions.StateDelta = map[string]any{"counter": i}
						if err := svc.AppendEvent(ctx, s, ev); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			for _, s := range sess {
				got, err := svc.Get(ctx, s.Key(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if v, _ := got.Get("counter"); got.Len() != s4Events/sessions || fmt.Sprint(v) != fmt.Sprint(s4Events/sessions-1) {
					b.Fatalf("session %s holds %d events and counter %v, want %d and %d", s.Key().SessionID, got.Len(), v, s4Events/sessions, s4Events/sessions-1)
				}
			}
			b.StartTimer()
			n++
		}
		b.ReportMetric(float64(n*s4Events)/b.Elapsed().Seconds(), "events/s")
	})

	// Read10000 reads the session; Read10000Events also reads every one
	// of its events, decoded: the cost of a reader that needs them all.
	read := func(b *testing.B, events bool) {
		svc := open(b)
		appendAll(b, svc, "read")
		key := session.Key{AppName: "bench", UserID: "user", SessionID: "read"}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			sess, err := svc.Get(ctx, key, nil)
			if err != nil {
				b.Fatal(err)
			}
			if sess.Len() != s4Events {
				b.Fatalf("read %d events, want %d", sess.Len(), s4Events)
			}
			if !events {
				continue
			}
			evs := sess.Events()
			if last := evs[s4Events-1]; len(evs) != s4Events || last.Content.Parts[0].Text != "event text" ||
				fmt.Sprint(last.Actions.StateDelta["counter"]) != fmt.Sprint(s4Events-1) {
				b.Fatalf("read %d events, the last %+v", len(evs), last)
			}
		}
	}
	b.Run("Read10000", func(b *testing.B) { read(b, false) })
	b.Run("Read10000Events", func(b *testing.B) { read(b, true) })

	// Each iteration is S1 exactly: 2,000 invocations round-robin over 100
	// new sessions, which end with 80 events each, whatever -benchtime says.
	b.Run("S1", func(b *testing.B) {
		const invocations = 2000
		svc := open(b)
		r := newRunner(b, newS1Agent(b), svc)
		b.ReportAllocs()
		round := 0
		for b.Loop() {
			b.StopTimer()
			ids := createSessions(b, svc, 100, fmt.Sprintf("r%d-", round))
			b.StartTimer()
			for i := range invocations {
				if n := invoke(b, r, ids[i%len(ids)]); n != 3 {
					b.Fatalf("invocation yielded %d events, want 3", n)
				}
			}
			b.StopTimer()
			checkS1Sessions(b, svc, ids, invocations)
			b.StartTimer()
			round++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(round*invocations), "ns/inv")
	})
}
