package sqlsession

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
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
	queries := map[string]string{"session": sessionQuery(st.db.Dialect), "before": queryEventsBefore}
	for name, q := range queries {
		got := explain(t, st, q)
		if !strings.Contains(got, "SEARCH events USING PRIMARY KEY (app_name=? AND user_id=? AND session_id=? AND seq>?") {
			t.Errorf("%s: plan %q does not seek the primary key", name, got)
		}
		if strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: plan %q sorts rows instead of reading them in key order", name, got)
		}
	}
	// The session's sequence number is its last event's: the append's check
	// and the reads of a session find it by seeking the primary key, never
	// by scanning the session's events.
	others := map[string]string{
		"append": writeQueries(st.db.Dialect)[wInsertEvent],
	}
	for name, q := range others {
		got := explain(t, st, q)
		if strings.Contains(got, "SCAN") || !strings.Contains(got, "USING PRIMARY KEY (app_name=? AND user_id=? AND session_id=?)") {
			t.Errorf("%s: plan %q does not seek the primary key", name, got)
		}
	}
}

func explain(t *testing.T, st *Store, q string) string {
	t.Helper()
	// Numbered parameters ($n) first, then each ? takes the next number.
	n := 0
	for _, m := range regexp.MustCompile(`\$([0-9]+)`).FindAllStringSubmatch(q, -1) {
		if k, _ := strconv.Atoi(m[1]); k > n {
			n = k
		}
	}
	args := make([]any, n+strings.Count(q, "?"))
	for i := range args {
		args[i] = "x"
	}
	rows, err := st.db.R.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// TestEventReaderOrder checks that a read returns events in sequence order
// even if the database sends them out of order (S6: events come oldest
// first).
func TestEventReaderOrder(t *testing.T) {
	var r eventReader
	r.size(3)
	for _, seq := range []int64{2, 3, 1} {
		data := []byte(`{"id":"e` + strconv.FormatInt(seq, 10) + `","actions":{}}`)
		if err := r.add(data, false, seq); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, ev := range r.result(false) {
		ids = append(ids, ev.ID)
	}
	if got := strings.Join(ids, ","); got != "e1,e2,e3" {
		t.Fatalf("events in order %s, want e1,e2,e3", got)
	}
}

// TestWriteConnectionRecovers checks that a SQLite file's write connection
// left in a transaction, which no append should ever do, costs at most the
// append that finds it so: the next one works (S7: appends stay atomic).
func TestWriteConnectionRecovers(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "pin.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := session.NewService(st, nil)
	sess, err := svc.Create(ctx, session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := st.pin
	if err := p.lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	p.unlock()
	first := svc.AppendEvent(ctx, sess, event.NewModelText("inv", "agent", "one"))
	if err := svc.AppendEvent(ctx, sess, event.NewModelText("inv", "agent", "two")); err != nil {
		t.Fatalf("append after a stray transaction (first append: %v): %v", first, err)
	}
	got, err := svc.Get(ctx, sess.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 2
	if first != nil {
		want = 1
	}
	if got.Len() != want {
		t.Fatalf("stored %d events, want %d (first append: %v)", got.Len(), want, first)
	}
}

// TestEventReaderOwnership checks that an encoded read copies the bytes
// the driver may write again and keeps the ones it hands over.
func TestEventReaderOwnership(t *testing.T) {
	r := eventReader{encoded: true}
	driver := []byte(`{"id":"e1"}`)
	own := []byte(`{"id":"e2"}`)
	if err := r.add(driver, false, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.add(own, true, 2); err != nil {
		t.Fatal(err)
	}
	copy(driver, `{"id":"xx"}`) // the driver reuses its buffer
	raw := r.rawResult(true)
	if len(raw) != 2 || string(raw[0]) != `{"id":"e1"}` || string(raw[1]) != `{"id":"e2"}` {
		t.Fatalf("read %q", raw)
	}
	if &raw[1][0] != &own[0] {
		t.Fatal("bytes of the reader's own were copied")
	}
	if cap(raw[1]) != len(raw[1]) {
		t.Fatalf("kept bytes have spare capacity %d: an append to them could write over memory", cap(raw[1])-len(raw[1]))
	}
}
