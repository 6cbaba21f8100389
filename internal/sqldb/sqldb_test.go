package sqldb_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/internal/sqldb/sqldbtest"
)

// TestFreshBlobs checks the property FreshBlobs promises against the
// driver in use: BLOB values scanned as sql.RawBytes stay intact, each in
// memory of its own, after the rows that follow them are read, across
// pages of the table and past the end of the rows.
func TestFreshBlobs(t *testing.T) {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldbtest.SQLiteURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.FreshBlobs() {
		t.Fatal("SQLite: FreshBlobs is false")
	}
	if _, err := db.W.ExecContext(ctx, `CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, 500)
	for i := range want {
		want[i] = bytes.Repeat([]byte(fmt.Sprintf("%03d-", i)), 1+i%300) // some span overflow pages
		if _, err := db.W.ExecContext(ctx, `INSERT INTO b (id, v) VALUES (?, ?)`, i, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.R.QueryContext(ctx, `SELECT v FROM b ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for rows.Next() {
		var raw sql.RawBytes
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, raw)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(kept) != len(want) {
		t.Fatalf("read %d rows, want %d", len(kept), len(want))
	}
	for i := range want {
		if !bytes.Equal(kept[i], want[i]) {
			t.Fatalf("row %d changed after later rows were read: %.20q…, want %.20q…", i, kept[i], want[i])
		}
		if i > 0 && &kept[i][0] == &kept[i-1][0] {
			t.Fatalf("rows %d and %d share memory", i-1, i)
		}
	}
}

// TestOpenNewFileConcurrently opens one new SQLite file from several
// openers at once, as replicas starting together do, round after round.
// Each must succeed and find the file in WAL mode. (Switching a file to
// WAL is refused at once, busy timeout or not, while another connection
// is switching it; an opener that gave up then failed to start.)
func TestOpenNewFileConcurrently(t *testing.T) {
	const rounds, openers = 100, 6
	ctx := context.Background()
	for round := range rounds {
		url := sqldbtest.SQLiteURL(t)
		var wg sync.WaitGroup
		for i := range openers {
			wg.Go(func() {
				db, err := sqldb.Open(ctx, url, nil)
				if err != nil {
					t.Errorf("round %d, opener %d: %v", round, i, err)
					return
				}
				defer db.Close()
				var mode string
				if err := db.R.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
					t.Errorf("round %d, opener %d: journal mode %q, %v; want wal", round, i, mode, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

// TestOpenKeepsWAL checks that a SQLite file is in WAL mode, which the
// store relies on, even when the URL's query asks for another journal
// mode: Loom's own settings come first.
func TestOpenKeepsWAL(t *testing.T) {
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldbtest.SQLiteURL(t)+"?_journal_mode=DELETE", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, pool := range map[string]*sql.DB{"write": db.W, "read": db.R} {
		var mode string
		if err := pool.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("%s pool: journal mode %q, %v; want wal", name, mode, err)
		}
	}
}
