package sqlsession_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sessiontest"
	"github.com/loomkit/loom/session/sqlsession"
)

func open(t *testing.T, dsn string) *sqlsession.Store {
	t.Helper()
	st, err := sqlsession.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformanceSQLite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return open(t, sqldbtest.SQLiteURL(t)) })
}

func TestConformanceSQLiteMemory(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store { return open(t, "sqlite::memory:") })
}

func TestConformancePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	sessiontest.Run(t, func(t *testing.T) session.Store { return open(t, sqldbtest.PostgresURL(t)) })
}

func FuzzAppendStateDelta(f *testing.F) {
	st, err := sqlsession.Open(context.Background(), sqldbtest.SQLiteURL(f), nil)
	if err != nil {
		f.Fatal(err)
	}
	sessiontest.FuzzAppendStateDelta(f, st)
}

func TestLeaseSQLite(t *testing.T) {
	sessiontest.RunLease(t, func(t *testing.T) (session.Store, session.Store) {
		dsn := sqldbtest.SQLiteURL(t)
		return open(t, dsn), open(t, dsn)
	})
}

func TestLeasePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	sessiontest.RunLease(t, func(t *testing.T) (session.Store, session.Store) {
		dsn := sqldbtest.PostgresURL(t)
		return open(t, dsn), open(t, dsn)
	})
}
