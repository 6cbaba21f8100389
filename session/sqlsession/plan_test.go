package sqlsession

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventReadsUseThePrimaryKey checks, on SQLite's query plans, that every
// read of events seeks one session's rows through the (session, seq)
// primary key: windowed reads of the most recent events then cost the same
// on a 100,000-event session as on a short one (BENCHMARKS S4), and a read
// never scans other sessions' events.
func TestEventReadsUseThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "plan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	queries := map[string]string{"after": queryEventsAsc, "before": queryEventsBefore}
	for name, q := range queries {
		args := []any{"a", "u", "s", 0, 10, 10}[:strings.Count(q, "?")]
		rows, err := st.db.R.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, "SEARCH events USING PRIMARY KEY (app_name=? AND user_id=? AND session_id=? AND seq>?") {
			t.Errorf("%s: plan %q does not seek the primary key", name, got)
		}
		if strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: plan %q sorts rows instead of reading them in key order", name, got)
		}
	}
}
