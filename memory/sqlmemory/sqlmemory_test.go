package sqlmemory_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memorytest"
	"github.com/loomkit/loom/memory/sqlmemory"
)

func open(t *testing.T, dsn string) *sqlmemory.Store {
	t.Helper()
	st, err := sqlmemory.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	return st // memorytest closes it
}

func TestConformanceSQLite(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return open(t, sqldbtest.SQLiteURL(t)) })
}

func TestConformanceSQLiteMemory(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Store { return open(t, "sqlite::memory:") })
}

func TestConformancePostgres(t *testing.T) {
	sqldbtest.PostgresServer(t)
	memorytest.Run(t, func(t *testing.T) memory.Store { return open(t, sqldbtest.PostgresURL(t)) })
}
