package sqlsession_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
)

// TestAppendDeadlinePostgres: an append whose deadline falls around the
// time its commit takes either fails and stored nothing, or succeeds and
// stored its event; the copy it went through stays current either way. A
// deadline that cuts a statement short after the database received it must
// not be reported as a failure of an append that commits.
func TestAppendDeadlinePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	svc := session.NewService(open(t, sqldbtest.PostgresURL(t)), nil)
	ctx := t.Context()
	key := session.Key{AppName: "deadline", UserID: "u", SessionID: "s"}
	sess, err := svc.Create(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The median time of an append with a state delta.
	var times []time.Duration
	for i := range 60 {
		start := time.Now()
		ev := event.NewUserText("inv", "warm-up")
		ev.Actions.StateDelta = map[string]any{"k": i, "user:u": i}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	median := times[len(times)/2]

	const trials = 600
	var failed, ambiguous, stale int
	deadline := time.Now().Add(12 * time.Second)
	n := 0
	for ; n < trials && time.Now().Before(deadline); n++ {
		d := time.Duration(rand.Int64N(int64(2*median) + 1))
		if n%10 == 0 { // a few deadlines before the statement is even sent
			d = time.Duration(rand.Int64N(int64(50 * time.Microsecond)))
		}
		ev := event.NewUserText("inv", "trial")
		ev.ID = fmt.Sprintf("trial-%d", n)
		ev.Actions.StateDelta = map[string]any{"k": n, "user:u": n}
		tctx, cancel := context.WithTimeout(ctx, d)
		err := svc.AppendEvent(tctx, sess, ev)
		cancel()
		if errors.Is(err, session.ErrStale) {
			stale++
			if err := svc.Refresh(ctx, sess); err != nil {
				t.Fatal(err)
			}
		}
		got, gerr := svc.Get(ctx, key, &session.GetOptions{NumRecentEvents: 1})
		if gerr != nil {
			t.Fatal(gerr)
		}
		stored := got.Len() == 1 && got.At(0).ID == ev.ID
		if err != nil {
			failed++
		}
		if (err != nil) == stored {
			ambiguous++
			if ambiguous <= 3 {
				t.Errorf("trial %d (deadline %s): AppendEvent = %v, but the event stored = %v", n, d, err, stored)
			}
		}
	}
	t.Logf("median append %s; %d trials, %d failed, %d ambiguous, %d stale copies", median, n, failed, ambiguous, stale)
	if ambiguous > 0 || stale > 0 {
		t.Errorf("%d ambiguous outcomes and %d stale copies in %d trials, want none", ambiguous, stale, n)
	}
	if failed == 0 {
		t.Errorf("no append failed in %d trials: the deadlines do not test anything", n)
	}
}
