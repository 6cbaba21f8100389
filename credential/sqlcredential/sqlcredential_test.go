package sqlcredential_test

import (
	"bytes"
	"context"
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/credential/credentialtest"
	"github.com/loomkit/loom/credential/sqlcredential"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
)

func open(t *testing.T, dsn string) *sqlcredential.Store {
	t.Helper()
	s, err := sqlcredential.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceSQLite(t *testing.T) {
	credentialtest.Run(t, func(t *testing.T) credential.Store { return open(t, sqldbtest.SQLiteURL(t)) })
}

func TestConformancePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	credentialtest.Run(t, func(t *testing.T) credential.Store { return open(t, sqldbtest.PostgresURL(t)) })
}

// TestT20RawDatabaseHoldsNoSecret reads the database file itself, past the
// store: neither the secret nor anything but sealed bytes is there
// (CONFORMANCE T20).
func TestT20RawDatabaseHoldsNoSecret(t *testing.T) {
	ctx := context.Background()
	dsn := sqldbtest.SQLiteURL(t)
	svc, err := sqlcredential.NewService(ctx, dsn, credential.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("ya29.refresh-me-if-you-can")
	if err := svc.Put(ctx, credential.Key{AppName: "app", UserID: "alice", Name: "calendar"}, secret); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn[len("sqlite://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rec []byte
	if err := db.QueryRow(`SELECT record FROM credentials WHERE user_id = 'alice'`).Scan(&rec); err != nil {
		t.Fatal(err)
	}
	if len(rec) < len(secret) || bytes.Contains(rec, secret) {
		t.Fatalf("raw record %q holds the secret or is not a sealed record", rec)
	}
}
