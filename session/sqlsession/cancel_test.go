package sqlsession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// TestCancelReachesOtherStore: a cancel requested through one store
// reaches, within the polling delay, a watch of the same session through
// another store over the same database (another process), and only it: a
// watch of another session, and one started after the request, stay
// untouched. WatchCancel's context ends with ErrCancelRequested as cause.
func TestCancelReachesOtherStore(t *testing.T) {
	run := func(t *testing.T, dsn string) {
		ctx := context.Background()
		open := func() *session.Service {
			st, err := sqlsession.Open(ctx, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			svc := session.NewService(st, nil)
			t.Cleanup(func() { svc.Close() })
			return svc
		}
		runner, sender := open(), open()
		key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
		other := session.Key{AppName: "a", UserID: "u", SessionID: "t"}

		watched, stop, err := runner.WatchCancel(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		bystander, stopOther, err := runner.WatchCancel(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		defer stopOther()
		start := time.Now()
		if ok, err := sender.Cancel(ctx, key); !ok || err != nil {
			t.Fatalf("cancel: %v %v", ok, err)
		}
		select {
		case <-watched.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the watch did not see the cancel")
		}
		if d := time.Since(start); d > 10*sqlsession.CancelPollInterval {
			t.Errorf("the cancel took %v", d)
		}
		if !errors.Is(context.Cause(watched), session.ErrCancelRequested) {
			t.Errorf("cause %v", context.Cause(watched))
		}
		later, stopLater, err := runner.WatchCancel(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer stopLater()
		time.Sleep(3 * sqlsession.CancelPollInterval)
		if bystander.Err() != nil || later.Err() != nil {
			t.Errorf("a cancel of one session, before the watch, ended: other session %v, later watch %v", bystander.Err(), later.Err())
		}
	}
	t.Run("SQLite", func(t *testing.T) { run(t, sqldbtest.SQLiteURL(t)) })
	t.Run("Postgres", func(t *testing.T) { run(t, sqldbtest.PostgresURL(t)) })
}
