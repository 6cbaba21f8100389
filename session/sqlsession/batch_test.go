package sqlsession_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// gcCreated is the creation time of the sessions of the group commit tests.
var gcCreated = time.Unix(1_700_000_000, 0)

func gcKey(id string) session.Key {
	return session.Key{AppName: "gc", UserID: "u", SessionID: id}
}

func gcCreate(t *testing.T, st *sqlsession.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		rec := &session.Record{Key: gcKey(id), CreateTime: gcCreated, UpdateTime: gcCreated}
		if err := st.CreateSession(t.Context(), rec, session.Delta{}); err != nil {
			t.Fatal(err)
		}
	}
}

// gcAppend is one append of a batch test.
type gcAppend struct {
	name    string // names the outcome
	session string
	seq     int64
	id      string
	delta   map[string]any // session-scoped
}

// runBatch holds the write connection while the appends are started, so
// that one of them takes the turn and waits for the connection and the
// others queue behind it, then lets them run: the leader takes them all
// into one transaction. It returns each append's outcome by name, and the
// number of append transactions committed meanwhile.
func runBatch(t *testing.T, st *sqlsession.Store, appends []gcAppend) (map[string]error, int64) {
	t.Helper()
	release := sqlsession.HoldWrites(st)
	before := sqlsession.AppendCommits(st)
	var (
		mu   sync.Mutex
		errs = map[string]error{}
		wg   sync.WaitGroup
	)
	for _, a := range appends {
		wg.Go(func() {
			ev := event.NewModelText("inv", "agent", a.name)
			ev.ID = a.id
			err := st.AppendEvent(context.Background(), gcKey(a.session), gcCreated, a.seq, ev, session.Delta{Session: a.delta})
			mu.Lock()
			errs[a.name] = err
			mu.Unlock()
		})
	}
	waitFor(t, func() bool { return sqlsession.QueuedAppends(st) == len(appends)-1 })
	release(false)
	wg.Wait()
	return errs, sqlsession.AppendCommits(st) - before
}

// waitFor polls cond until it holds, for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// gcEvents returns the ids of a session's events, in order, and its state.
func gcEvents(t *testing.T, st *sqlsession.Store, id string) ([]string, map[string]any) {
	t.Helper()
	rec, err := st.GetSession(t.Context(), gcKey(id), session.Window{})
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	var ids []string
	for _, ev := range rec.Events {
		ids = append(ids, ev.ID)
	}
	if rec.Seq != int64(len(ids)) {
		t.Errorf("%s: seq %d with %d events", id, rec.Seq, len(ids))
	}
	return ids, rec.State
}

// TestGroupCommitConcurrent: 32 sessions take 50 appends each at once;
// every session ends with exactly its events, in order, and the state of
// its last one, and the appends shared transactions.
func TestGroupCommitConcurrent(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	ctx := t.Context()
	const sessions, perSession = 32, 50
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = fmt.Sprint("s", i)
	}
	gcCreate(t, st, ids...)
	before := sqlsession.AppendCommits(st)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for n := range perSession {
				ev := event.NewModelText("inv", "agent", "text")
				ev.ID = fmt.Sprintf("%s-%d", id, n)
				d := session.Delta{
					Session: map[string]any{"n": n, "id": ev.ID},
					User:    map[string]any{id: n},
					App:     map[string]any{id: n},
				}
				if err := st.AppendEvent(ctx, gcKey(id), gcCreated, int64(n), ev, d); err != nil {
					t.Errorf("%s: append %d: %v", id, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	commits := sqlsession.AppendCommits(st) - before
	t.Logf("%d appends in %d transactions", sessions*perSession, commits)
	if commits >= sessions*perSession {
		t.Errorf("%d appends took %d transactions: none were shared", sessions*perSession, commits)
	}
	for _, id := range ids {
		rec, err := st.GetSession(ctx, gcKey(id), session.Window{})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq != perSession || len(rec.Events) != perSession {
			t.Fatalf("%s: seq %d, %d events, want %d", id, rec.Seq, len(rec.Events), perSession)
		}
		for n, ev := range rec.Events {
			if want := fmt.Sprintf("%s-%d", id, n); ev.ID != want {
				t.Fatalf("%s: event %d is %q, want %q", id, n+1, ev.ID, want)
			}
		}
		last := float64(perSession - 1)
		if rec.State["n"] != last || rec.State["id"] != fmt.Sprintf("%s-%d", id, perSession-1) {
			t.Errorf("%s: state %v, want n=%v", id, rec.State, last)
		}
		if rec.UserState[id] != last || rec.AppState[id] != last {
			t.Errorf("%s: user state %v, app state %v, want %v", id, rec.UserState[id], rec.AppState[id], last)
		}
	}
}

// TestGroupCommitRefusals: in one batch, appends with a stale seq, a
// duplicate id, or to a missing session are refused with their own errors
// and change nothing, two appends from the same seq of one session are one
// success and one ErrStale, and the others succeed, in one commit.
func TestGroupCommitRefusals(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	gcCreate(t, st, "a", "b", "c", "stale", "dup", "twice")
	for _, id := range []string{"stale", "dup"} {
		ev := event.NewModelText("inv", "agent", "first")
		ev.ID = id + "-1"
		if err := st.AppendEvent(t.Context(), gcKey(id), gcCreated, 0, ev, session.Delta{}); err != nil {
			t.Fatal(err)
		}
	}
	errs, commits := runBatch(t, st, []gcAppend{
		{name: "a", session: "a", id: "a-1", delta: map[string]any{"k": "a"}},
		{name: "b", session: "b", id: "b-1", delta: map[string]any{"k": "b"}},
		{name: "stale", session: "stale", seq: 0, id: "stale-2", delta: map[string]any{"k": "stale"}},
		{name: "dup", session: "dup", seq: 1, id: "dup-1", delta: map[string]any{"k": "dup"}},
		{name: "missing", session: "missing", id: "missing-1"},
		{name: "twice-x", session: "twice", id: "x", delta: map[string]any{"k": "x"}},
		{name: "twice-y", session: "twice", id: "y", delta: map[string]any{"k": "y"}},
		{name: "c", session: "c", id: "c-1", delta: map[string]any{"k": "c"}},
	})
	if commits != 1 {
		t.Errorf("the batch took %d commits, want 1", commits)
	}
	for name, want := range map[string]error{"stale": session.ErrStale, "dup": session.ErrAlreadyExists, "missing": session.ErrNotFound} {
		if !errors.Is(errs[name], want) {
			t.Errorf("%s: %v, want %v", name, errs[name], want)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if errs[id] != nil {
			t.Errorf("%s: %v", id, errs[id])
		}
		evs, state := gcEvents(t, st, id)
		if len(evs) != 1 || evs[0] != id+"-1" || state["k"] != id {
			t.Errorf("%s holds %v with state %v", id, evs, state)
		}
	}
	for _, id := range []string{"stale", "dup"} {
		if evs, state := gcEvents(t, st, id); len(evs) != 1 || evs[0] != id+"-1" || len(state) != 0 {
			t.Errorf("refused append to %s changed it: %v, state %v", id, evs, state)
		}
	}
	// One of the two appends from seq 0 went in first; the other is stale.
	x, y := errs["twice-x"], errs["twice-y"]
	won, lost := "x", y
	if x != nil {
		won, lost = "y", x
	}
	if !errors.Is(lost, session.ErrStale) || (x == nil) == (y == nil) {
		t.Errorf("two appends from one seq: %v and %v, want one success and one ErrStale", x, y)
	}
	if evs, state := gcEvents(t, st, "twice"); len(evs) != 1 || evs[0] != won || state["k"] != won {
		t.Errorf("twice holds %v with state %v, want [%s]", evs, state, won)
	}
}

// TestGroupCommitFailedAppendRetriedAlone: an append whose state write
// fails in the middle of a batch rolls the batch back; each append then
// runs alone, so that only the failing one fails, and it stores nothing.
func TestGroupCommitFailedAppendRetriedAlone(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	gcCreate(t, st, "a", "b", "p", "c")
	if err := sqlsession.ExecWrite(st, `CREATE TRIGGER poison BEFORE INSERT ON session_state WHEN NEW.name = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned state'); END`); err != nil {
		t.Fatal(err)
	}
	errs, commits := runBatch(t, st, []gcAppend{
		{name: "a", session: "a", id: "a-1", delta: map[string]any{"k": "a"}},
		{name: "b", session: "b", id: "b-1", delta: map[string]any{"k": "b"}},
		{name: "p", session: "p", id: "p-1", delta: map[string]any{"k": "p", "poison": true}},
		{name: "c", session: "c", id: "c-1", delta: map[string]any{"k": "c"}},
	})
	if errs["p"] == nil || !strings.Contains(errs["p"].Error(), "poisoned state") {
		t.Errorf("poisoned append: %v, want the trigger's error", errs["p"])
	}
	if evs, state := gcEvents(t, st, "p"); len(evs) != 0 || len(state) != 0 {
		t.Errorf("failed append stored %v, state %v", evs, state)
	}
	for _, id := range []string{"a", "b", "c"} {
		if errs[id] != nil {
			t.Errorf("%s failed with another append's error: %v", id, errs[id])
		}
		evs, state := gcEvents(t, st, id)
		if len(evs) != 1 || state["k"] != id {
			t.Errorf("%s holds %v with state %v", id, evs, state)
		}
	}
	if commits != 3 {
		t.Errorf("%d commits, want 3 (the three good appends alone)", commits)
	}
}

// TestGroupCommitCommitFails: when the COMMIT of a batch fails, every
// append of the batch gets its error and none is stored.
func TestGroupCommitCommitFails(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	gcCreate(t, st, "a", "b", "f")
	// A foreign key checked at COMMIT, broken by the event with id "f-1".
	for _, q := range []string{
		`CREATE TABLE parent (id TEXT PRIMARY KEY)`,
		`CREATE TABLE child (p TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)`,
		`CREATE TRIGGER fail_commit AFTER INSERT ON events WHEN NEW.id = 'f-1' BEGIN INSERT INTO child VALUES ('none'); END`,
	} {
		if err := sqlsession.ExecWrite(st, q); err != nil {
			t.Fatal(err)
		}
	}
	errs, _ := runBatch(t, st, []gcAppend{
		{name: "a", session: "a", id: "a-1", delta: map[string]any{"k": "a"}},
		{name: "f", session: "f", id: "f-1", delta: map[string]any{"k": "f"}},
		{name: "b", session: "b", id: "b-1", delta: map[string]any{"k": "b"}},
	})
	for _, id := range []string{"a", "b", "f"} {
		if errs[id] == nil || !strings.Contains(errs[id].Error(), "commit") {
			t.Errorf("%s: %v, want the commit's error", id, errs[id])
		}
		if evs, state := gcEvents(t, st, id); len(evs) != 0 || len(state) != 0 {
			t.Errorf("%s stored %v, state %v after a failed commit", id, evs, state)
		}
	}
	// The store goes on.
	ev := event.NewModelText("inv", "agent", "after")
	if err := st.AppendEvent(t.Context(), gcKey("a"), gcCreated, 0, ev, session.Delta{}); err != nil {
		t.Fatalf("append after a failed commit: %v", err)
	}
}

// TestGroupCommitCancelQueued: an append whose context ends while it waits
// for its turn returns at once with the context's error and stores nothing;
// the append ahead of it is unaffected.
func TestGroupCommitCancelQueued(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	gcCreate(t, st, "lead", "gone")
	release := sqlsession.HoldWrites(st)
	lead := make(chan error, 1)
	go func() {
		lead <- st.AppendEvent(context.Background(), gcKey("lead"), gcCreated, 0, event.NewUserText("inv", "lead"), session.Delta{})
	}()
	waitFor(t, func() bool { return sqlsession.AppendBusy(st) })
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		gone <- st.AppendEvent(ctx, gcKey("gone"), gcCreated, 0, event.NewUserText("inv", "gone"), session.Delta{Session: map[string]any{"k": 1}})
	}()
	waitFor(t, func() bool { return sqlsession.QueuedAppends(st) == 1 })
	cancel()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled append: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled queued append did not return")
	}
	if n := sqlsession.QueuedAppends(st); n != 0 {
		t.Errorf("%d appends still queued", n)
	}
	release(false)
	if err := <-lead; err != nil {
		t.Fatalf("leading append: %v", err)
	}
	if evs, _ := gcEvents(t, st, "lead"); len(evs) != 1 {
		t.Errorf("lead holds %d events, want 1", len(evs))
	}
	if evs, state := gcEvents(t, st, "gone"); len(evs) != 0 || len(state) != 0 {
		t.Errorf("cancelled append stored %v, state %v", evs, state)
	}
}

// TestGroupCommitClosed: appends waiting when the store closes fail with
// its error.
func TestGroupCommitClosed(t *testing.T) {
	st := open(t, sqldbtest.SQLiteURL(t))
	gcCreate(t, st, "a", "b", "c")
	release := sqlsession.HoldWrites(st)
	errs := make(chan error, 3)
	for _, id := range []string{"a", "b", "c"} {
		go func() {
			errs <- st.AppendEvent(context.Background(), gcKey(id), gcCreated, 0, event.NewUserText("inv", id), session.Delta{})
		}()
	}
	waitFor(t, func() bool { return sqlsession.QueuedAppends(st) == 2 })
	release(true)
	for range 3 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "store is closed") {
			t.Errorf("append to a closed store: %v, want the store's closed error", err)
		}
	}
}
