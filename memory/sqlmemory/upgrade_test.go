package sqlmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
	"github.com/loomkit/loom/memory"
)

// schemaUpTo returns the migrations of both dialects up to version, and
// the latest version of dialect.
func schemaUpTo(t *testing.T, dialect string, version int) (fstest.MapFS, int) {
	t.Helper()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	latest := 0
	for _, d := range []string{"sqlite", "postgres"} {
		files, err := fs.ReadDir(sub, d)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			if d == dialect {
				latest = i + 1
			}
			if i >= version {
				continue
			}
			body, err := fs.ReadFile(sub, path.Join(d, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			old[path.Join(d, f.Name())] = &fstest.MapFile{Data: body}
		}
	}
	return old, latest
}

// testUpgrade opens a database that version from of the schema made and
// filled: Open upgrades it, keeps its memories searchable by the words of
// memory.Words, and an upsert by entry id then replaces an old row rather
// than adding to it.
func testUpgrade(t *testing.T, dsn, dialect string, from int) {
	ctx := context.Background()
	old, latest := schemaUpTo(t, dialect, from)
	db, err := sqldb.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, "memory", old); err != nil {
		t.Fatal(err)
	}
	// More rows than one batch of fillTerms.
	bodies := map[string]string{
		"e1": "the lighthouse keeper", "e2": "the lighthouse keeper",
		"e3": "lunch at the Café", "e4": "area x² squared",
	}
	for i := range fillBatch + 10 {
		bodies[fmt.Sprint("m", i)] = "mail keeper@lighthouse.example about the lamp"
	}
	for id, body := range bodies {
		content, err := json.Marshal(genai.NewContentFromText(body, genai.RoleUser))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.W.ExecContext(ctx, db.Rebind(`INSERT INTO memories (app_name, user_id, session_id, id, author, event_time, content, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), "app", "u", "s1", id, "user", time.Now().UnixNano(), content, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("open a version %d database: %v", from, err)
	}
	defer st.Close()
	var version int
	if err := st.db.R.QueryRowContext(ctx, `SELECT version FROM loom_schema_version WHERE component = 'memory'`).Scan(&version); err != nil || version != latest {
		t.Fatalf("schema version %d, %v; want %d", version, err, latest)
	}
	if hits, err := st.Search(ctx, "app", "u", "lamp", 1000); err != nil || len(hits) != fillBatch+10 {
		t.Fatalf("old memories found by lamp after the upgrade: %d, %v", len(hits), err)
	}
	// "keeper" and "lighthouse" are also words of the e-mail address.
	if hits, err := st.Search(ctx, "app", "u", "lighthouse", 1000); err != nil || len(hits) != len(bodies)-2 {
		t.Fatalf("old memories found by lighthouse after the upgrade: %d, %v", len(hits), err)
	}
	if dialect == "sqlite" {
		// The index agrees with the terms the rows hold now.
		if _, err := st.db.W.ExecContext(ctx, `INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Fatalf("full-text index after filling in terms: %v", err)
		}
	}
	for q, want := range map[string]int{"café": 1, "cafe": 0, "x": 1} {
		if hits, err := st.Search(ctx, "app", "u", q, 10); err != nil || len(hits) != want {
			t.Errorf("old memories found by %s after the upgrade: %d, %v; want %d", q, len(hits), err, want)
		}
	}
	newer := memory.Entry{ID: "e1", Author: "user", Timestamp: time.Now(), Content: genai.NewContentFromText("the lighthouse keeper retired", genai.RoleUser)}
	if err := st.Upsert(ctx, "app", "u", "s1", []memory.Entry{newer}); err != nil {
		t.Fatal(err)
	}
	hits, err := st.Search(ctx, "app", "u", "lighthouse", 1000)
	if err != nil || len(hits) != len(bodies)-2 {
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

func TestUpgradeSQLite(t *testing.T) {
	for from := 1; from <= 2; from++ {
		t.Run(fmt.Sprint("FromVersion", from), func(t *testing.T) { testUpgrade(t, sqldbtest.SQLiteURL(t), "sqlite", from) })
	}
}

func TestUpgradePostgres(t *testing.T) {
	for from := 1; from <= 2; from++ {
		t.Run(fmt.Sprint("FromVersion", from), func(t *testing.T) { testUpgrade(t, sqldbtest.PostgresURL(t), "postgres", from) })
	}
}
