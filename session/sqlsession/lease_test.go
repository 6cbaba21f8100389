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

// TestLeaseRenewedAndRecovered: on SQLite a holder alive past the lease's
// duration keeps it (it renews it), and the lease of a holder that went
// away without releasing it (its store closed, as a process dies) is taken
// over once it has expired. On PostgreSQL the lock goes with the holder's
// connection at once.
func TestLeaseRenewedAndRecovered(t *testing.T) {
	const ttl = 300 * time.Millisecond
	key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
	run := func(t *testing.T, dsn string, recovery time.Duration) {
		ctx := context.Background()
		opts := &sqlsession.Options{LeaseTTL: ttl}
		holder, err := sqlsession.Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		other, err := sqlsession.Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := holder.Lease(ctx, key); err != nil {
			t.Fatal(err)
		}
		// Held for several lease durations: renewed, so still exclusive.
		c, cancel := context.WithTimeout(ctx, 4*ttl)
		_, err = other.Lease(c, key)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("lease held by a live holder past its duration: %v, want the wait to time out", err)
		}
		// The holder goes away without releasing.
		holder.Close()
		start := time.Now()
		c, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		release, err := other.Lease(c, key)
		if err != nil {
			t.Fatalf("lease of a holder that went away: %v", err)
		}
		release()
		if d := time.Since(start); d > recovery {
			t.Errorf("recovered after %v, want within %v", d, recovery)
		}
	}
	t.Run("SQLite", func(t *testing.T) { run(t, sqldbtest.SQLiteURL(t), ttl+time.Second) })
	t.Run("Postgres", func(t *testing.T) { run(t, sqldbtest.PostgresURL(t), time.Second) })
}
