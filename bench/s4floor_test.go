package bench_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// s4FloorRounds is the number of rounds BenchmarkS4Floor takes the median
// of.
const s4FloorRounds = 5

// sqliteFloor is the floor under S4's appends: a bare loop over one
// connection to a SQLite file with Loom's schema and pragmas (WAL,
// synchronous=NORMAL, busy timeout, foreign keys, a large automatic
// checkpoint), each append a transaction of Loom's shape: BEGIN IMMEDIATE,
// one insert of the encoded event, one upsert of the state key, COMMIT.
type sqliteFloor struct {
	mu                                  sync.Mutex
	db                                  *sql.DB
	conn                                *sql.Conn
	begin, insert, state, commit, count *sql.Stmt
}

// floorRecord is the floor's encoded event: what S4's event holds.
type floorRecord struct {
	ID           string         `json:"id"`
	InvocationID string         `json:"invocationId"`
	Author       string         `json:"author"`
	Timestamp    float64        `json:"timestamp"`
	Content      map[string]any `json:"content"`
	Actions      map[string]any `json:"actions"`
}

// newSQLiteFloor creates the database file with Loom's schema (by opening
// it once with the session service) and the sessions ids, then opens it
// bare.
func newSQLiteFloor(b *testing.B, file string, ids ...string) *sqliteFloor {
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, "sqlite://"+file, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		if _, err := svc.Create(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := svc.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", file+"?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=1&_synchronous=NORMAL&_txlock=immediate&_pragma=wal_autocheckpoint(16384)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	f := &sqliteFloor{db: db}
	b.Cleanup(func() { f.close(b) })
	if f.conn, err = db.Conn(ctx); err != nil {
		b.Fatal(err)
	}
	prep := func(q string) *sql.Stmt {
		st, err := f.conn.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	f.begin, f.commit = prep("BEGIN IMMEDIATE"), prep("COMMIT")
	f.insert = prep(`INSERT INTO events (app_name, user_id, session_id, seq, id, event_time, invocation_id, author, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	f.state = prep(`INSERT INTO session_state (app_name, user_id, session_id, name, value) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (app_name, user_id, session_id, name) DO UPDATE SET value = excluded.value`)
	f.count = prep(`SELECT count(*) FROM events WHERE app_name = 'bench' AND user_id = 'user' AND session_id = ?`)
	return f
}

// close closes the floor's connection and database (which checkpoints
// the WAL into the database file); later calls do nothing.
func (f *sqliteFloor) close(b *testing.B) {
	if f.conn == nil {
		return
	}
	for _, st := range []*sql.Stmt{f.begin, f.insert, f.state, f.commit, f.count} {
		if st != nil {
			st.Close()
		}
	}
	if err := f.conn.Close(); err != nil {
		b.Error(err)
	}
	if err := f.db.Close(); err != nil {
		b.Error(err)
	}
	f.conn = nil
}

// append stores event seq (from 1) of session id, with the state delta
// counter = seq-1, in one transaction.
func (f *sqliteFloor) append(id string, seq int) error {
	ctx := context.Background()
	now := time.Now()
	evID := fmt.Sprintf("%s-%d", id, seq)
	data, err := json.Marshal(floorRecord{ID: evID, InvocationID: "inv", Author: "agent", Timestamp: float64(now.UnixMicro()) / 1e6,
		Content: map[string]any{"role": "model", "parts": []any{map[string]any{"text": "event text"}}},
		Actions: map[string]any{"stateDelta": map[string]any{"counter": seq - 1}}})
	if err != nil {
		return err
	}
	value, err := json.Marshal(seq - 1)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.begin.ExecContext(ctx); err != nil {
		return err
	}
	if _, err := f.insert.ExecContext(ctx, "bench", "user", id, seq, evID, now.UnixNano(), "inv", "agent", data); err != nil {
		return err
	}
	if _, err := f.state.ExecContext(ctx, "bench", "user", id, "counter", string(value)); err != nil {
		return err
	}
	_, err = f.commit.ExecContext(ctx)
	return err
}

// check fails b unless session id holds n events.
func (f *sqliteFloor) check(b *testing.B, id string, n int) {
	b.Helper()
	var got int
	if err := f.count.QueryRowContext(context.Background(), id).Scan(&got); err != nil || got != n {
		b.Fatalf("floor session %s holds %d events (%v), want %d", id, got, err, n)
	}
}

// BenchmarkS4Floor runs S4's appends on SQLite and the bare append loop
// (sqliteFloor) in the same process, in rounds, and reports Loom's time
// over the floor's (loom/floor, the median of 5 rounds,
// LOOM_BENCH_S4FLOOR_ROUNDS; target 1.3 or less) with both rates:
//
//   - Append: 10,000 events, one at a time into one session, in
//     alternating blocks of 500 (Loom's, the floor's);
//   - AppendParallel: 10,000 events from 16 sessions at once (625 each),
//     Loom's (with its group commit) and then the floor's (each append its
//     own transaction on the one connection) in each round.
//
// Run it once:
//
//	go test ./bench -run '^$' -bench S4Floor -benchtime 1x
func BenchmarkS4Floor(b *testing.B) {
	b.Run("Append", func(b *testing.B) { benchS4Floor(b, 1) })
	b.Run("AppendParallel", func(b *testing.B) { benchS4Floor(b, 16) })
}

func benchS4Floor(b *testing.B, sessions int) {
	ctx := context.Background()
	per := s4Events / sessions
	const block = 500
	rounds := envInt(b, "LOOM_BENCH_S4FLOOR_ROUNDS", s4FloorRounds)
	for b.Loop() {
		ratios := make([]float64, rounds)
		var loomSum, floorSum time.Duration
		for round := range ratios {
			dir := b.TempDir()
			ids := make([]string, sessions)
			for i := range ids {
				ids[i] = fmt.Sprint("s", i)
			}
			floor := newSQLiteFloor(b, filepath.Join(dir, "floor.db"), ids...)
			svc, err := sqlsession.NewService(ctx, "sqlite://"+filepath.Join(dir, "loom.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			sess := make([]*session.Session, sessions)
			for i, id := range ids {
				if sess[i], err = svc.Create(ctx, session.Key{AppName: "bench", UserID: "user", SessionID: id}, nil); err != nil {
					b.Fatal(err)
				}
			}
			loomAppend := func(s *session.Session, i int) error {
				ev := event.NewModelText("inv", "agent", "event text")
				ev.Actions.StateDelta = map[string]any{"counter": i}
				return svc.AppendEvent(ctx, s, ev)
			}
			var loom, bare time.Duration
			if sessions == 1 {
				for start := 0; start < per; start += block {
					t0 := time.Now()
					for i := start; i < start+block; i++ {
						if err := loomAppend(sess[0], i); err != nil {
							b.Fatal(err)
						}
					}
					t1 := time.Now()
					for i := start; i < start+block; i++ {
						if err := floor.append(ids[0], i+1); err != nil {
							b.Fatal(err)
						}
					}
					loom, bare = loom+t1.Sub(t0), bare+time.Since(t1)
				}
			} else {
				loom = timeParallel(b, sessions, func(j int) error {
					for i := range per {
						if err := loomAppend(sess[j], i); err != nil {
							return err
						}
					}
					return nil
				})
				bare = timeParallel(b, sessions, func(j int) error {
					for i := range per {
						if err := floor.append(ids[j], i+1); err != nil {
							return err
						}
					}
					return nil
				})
			}
			for i, id := range ids {
				got, err := svc.Get(ctx, sess[i].Key(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if v, _ := got.Get("counter"); got.Len() != per || fmt.Sprint(v) != fmt.Sprint(per-1) {
					b.Fatalf("session %s holds %d events and counter %v, want %d and %d", id, got.Len(), v, per, per-1)
				}
				floor.check(b, id, per)
			}
			svc.Close()
			ratios[round] = float64(loom) / float64(bare)
			loomSum, floorSum = loomSum+loom, floorSum+bare
		}
		slices.Sort(ratios)
		n := float64(s4Events * rounds)
		b.ReportMetric(n/loomSum.Seconds(), "loom-events/s")
		b.ReportMetric(n/floorSum.Seconds(), "floor-events/s")
		b.ReportMetric(ratios[len(ratios)/2], "loom/floor")
		b.Logf("loom/floor per round (sorted) %.2f", ratios)
	}
}

// timeParallel runs f(0) to f(n-1) at once and returns the time they took.
func timeParallel(b *testing.B, n int, f func(j int) error) time.Duration {
	b.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for j := range n {
		wg.Go(func() {
			if err := f(j); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	d := time.Since(t0)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return d
}
