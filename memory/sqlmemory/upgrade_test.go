package sqlmemory

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/memory"
)

// testUpgradeFromVersion1 opens a database that version 1 of the schema
// made and filled: Open upgrades it, keeps its memories searchable, and an
// upsert by entry id then replaces an old row rather than adding to it.
func testUpgradeFromVersion1(t *testing.T, dsn string) {
	ctx := context.Background()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	v1 := fstest.MapFS{}
	for _, dialect := range []string{"sqlite", "postgres"} {
		body, err := fs.ReadFile(sub, dialect+"/0001_init.sql")
		if err != nil {
			t.Fatal(err)
		}
		v1[dialect+"/0001_init.sql"] = &fstest.MapFile{Data: body}
	}
	db, err := sqldb.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, "memory", v1); err != nil {
		t.Fatal(err)
	}
	old := genai.NewContentFromText("the lighthouse keeper", genai.RoleUser)
	content, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e1", "e2"} {
		if _, err := db.W.ExecContext(ctx, db.Rebind(`INSERT INTO memories (app_name, user_id, session_id, id, author, event_time, content, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), "app", "u", "s1", id, "user", time.Now().UnixNano(), content, "the lighthouse keeper"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("open a version 1 database: %v", err)
	}
	defer st.Close()
	var version int
	if err := st.db.R.QueryRowContext(ctx, `SELECT version FROM loom_schema_version WHERE component = 'memory'`).Scan(&version); err != nil || version != 2 {
		t.Fatalf("schema version %d, %v; want 2", version, err)
	}
	if hits, err := st.Search(ctx, "app", "u", "lighthouse", 10); err != nil || len(hits) != 2 {
		t.Fatalf("old memories after the upgrade: %d, %v", len(hits), err)
	}
	newer := memory.Entry{ID: "e1", Author: "user", Timestamp: time.Now(), Content: genai.NewContentFromText("the lighthouse keeper retired", genai.RoleUser)}
	if err := st.Upsert(ctx, "app", "u", "s1", []memory.Entry{newer}); err != nil {
		t.Fatal(err)
	}
	hits, err := st.Search(ctx, "app", "u", "lighthouse", 10)
	if err != nil || len(hits) != 2 {
		t.Fatalf("memories after the upsert: %d, %v", len(hits), err)
	}
	texts := map[string]string{}
	for _, h := range hits {
		texts[h.ID] = h.Text()
	}
	if texts["e1"] != "the lighthouse keeper retired" || texts["e2"] != "the lighthouse keeper" {
		t.Fatalf("memories after the upsert: %v", texts)
	}
}

func TestUpgradeFromVersion1SQLite(t *testing.T) {
	testUpgradeFromVersion1(t, sqldbtest.SQLiteURL(t))
}

func TestUpgradeFromVersion1Postgres(t *testing.T) {
	testUpgradeFromVersion1(t, sqldbtest.PostgresURL(t))
}
