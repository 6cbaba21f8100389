package sqlsession_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestLeaseOfDeadProcessTakenOver: on SQLite, a lease whose owner was a
// process of this machine that has died (killed while it held the
// session, before its release was written) is taken over at once, not
// when it expires; a lease held by a live process, or by one of another
// machine, still waits.
//
// (CONFORMANCE S7)
func TestLeaseOfDeadProcessTakenOver(t *testing.T) {
	ctx := context.Background()
	s, err := sqlsession.Open(ctx, sqldbtest.SQLiteURL(t), &sqlsession.Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	for _, tc := range []struct {
		name, owner string
		taken       bool
	}{
		{"dead process", sqlsession.OwnerToken(dead.Process.Pid, "1", false), true},
		{"process id reused", sqlsession.OwnerToken(self, "1", false), true},
		{"live process", sqlsession.OwnerToken(self, sqlsession.ProcessStart(self), false), false},
		{"another machine", sqlsession.OwnerToken(dead.Process.Pid, "1", true), false},
		{"no identity", "feedface", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := session.Key{AppName: "a", UserID: "u", SessionID: tc.name}
			insert := fmt.Sprintf(`INSERT INTO session_leases (app_name, user_id, session_id, owner, expires) VALUES ('a', 'u', '%s', '%s', %d)`,
				tc.name, tc.owner, time.Now().Add(time.Hour).UnixNano())
			if err := sqlsession.ExecWrite(s, insert); err != nil {
				t.Fatal(err)
			}
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			start := time.Now()
			release, err := s.Lease(c, key)
			if !tc.taken {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("lease of %s: %v, want the wait to time out", tc.owner, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("lease left by a dead process: %v", err)
			}
			release()
			if d := time.Since(start); d > time.Second {
				t.Errorf("taken over after %v", d)
			}
		})
	}
}
