// Package sqldbtest gives tests of the SQL stores a database of their own.
//
// PostgreSQL tests read the server URL from LOOM_TEST_POSTGRES_URL (see
// scripts/postgres.sh). Without it they are skipped, except when the CI
// environment variable is set: a backend that did not run must never count
// as passing in CI.
package sqldbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// EnvPostgres names the environment variable holding the PostgreSQL URL.
const EnvPostgres = "LOOM_TEST_POSTGRES_URL"

// SQLiteURL returns the URL of a new SQLite database file in a temporary
// directory of t.
func SQLiteURL(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "loom.db")
}

// PostgresServer returns the URL of the test server, skipping t (failing it
// in CI) when there is none.
func PostgresServer(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvPostgres)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; run scripts/postgres.sh", EnvPostgres)
		}
		t.Skipf("%s is not set; run scripts/postgres.sh to test on PostgreSQL", EnvPostgres)
	}
	return u
}

// PostgresURL creates a schema of its own for t on the test server and
// returns a URL whose connections use it (search_path). The schema is
// dropped when t ends, so tests, and test packages running in parallel,
// never see each other's tables.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := PostgresServer(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		db.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("bad %s: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
